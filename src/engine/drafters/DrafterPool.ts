import type {ModelBackend} from "../../backend/ModelBackend.js";
import {ChainDrafter} from "./ChainDrafter.js";
import {createDrafter} from "./createDrafter.js";
import type {Drafter} from "./Drafter.js";
import {type DrafterSpec, drafterLabel} from "./parseDrafterSpec.js";
import {SuffixDrafter} from "./SuffixDrafter.js";

/**
 * The drafters of one server (or any long-lived caller), one instance per distinct spec, so every
 * request naming `suffix:3:1:24:100000` shares one suffix cache, and a chain shares its members with
 * the drafters of the same spec (`suffix` and `ngram+suffix` learn into one cache). At most
 * `capacity` distinct single drafters are kept; the least recently used is dropped beyond that (a
 * dropped suffix drafter's cache goes with it), so the memory held is at most capacity × the
 * largest MAX_NODES requested.
 */
export class DrafterPool {
    private readonly singles = new Map<string, Drafter>();

    public constructor(
        private readonly draft: ModelBackend | undefined,
        private readonly capacity = 4
    ) {}

    public get(spec: DrafterSpec, field = "drafter"): Drafter {
        if (spec.kind === "chain") return new ChainDrafter(spec.members.map((member) => this.get(member, field)));
        const label = drafterLabel(spec);
        let drafter = this.singles.get(label);
        if (drafter != null) {
            this.singles.delete(label);
        } else {
            drafter = createDrafter(spec, this.draft, field);
        }
        this.singles.set(label, drafter);
        while (this.singles.size > this.capacity) this.singles.delete(this.singles.keys().next().value!);
        return drafter;
    }

    /** Trie nodes held by every suffix cache in the pool (the memory the pool's drafters hold). */
    public get suffixCacheNodes(): number {
        let nodes = 0;
        for (const drafter of this.singles.values()) if (drafter instanceof SuffixDrafter) nodes += drafter.cache.nodeCount;
        return nodes;
    }
}
