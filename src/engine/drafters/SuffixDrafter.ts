import {type Drafter, type DrafterSession, type DraftRequest} from "./Drafter.js";
import {drafterLabel, type SuffixDrafterSpec} from "./parseDrafterSpec.js";
import {SuffixCache} from "./SuffixCache.js";

/**
 * Suffix decoding over earlier outputs: every generation this drafter serves looks its context up in
 * one shared, memory-bounded SuffixCache, and adds its own output when it finishes. Proposals carry
 * no rows (q = δ_x). The first generation of a run finds an empty cache and decodes target-only.
 */
export class SuffixDrafter implements Drafter {
    public readonly label: string;
    public readonly members: readonly string[];
    public readonly cache: SuffixCache;

    public constructor(public readonly spec: SuffixDrafterSpec) {
        this.label = drafterLabel(spec);
        this.members = [this.label];
        this.cache = new SuffixCache({depth: spec.depth, maxNodes: spec.maxNodes});
    }

    public async start(): Promise<DrafterSession> {
        const {cache, label: source} = this;
        const {minCount, minMatch} = this.spec;
        return {
            supportsArgmax: true,
            async propose(request: DraftRequest) {
                return {tokens: cache.lookup(request.history, request.maxTokens, minCount, minMatch), source, consulted: [source]};
            },
            observe() {},
            finish(output: readonly number[]) {
                cache.insert(output);
            },
            async dispose() {}
        };
    }
}
