import type {ModelBackend} from "../../backend/ModelBackend.js";
import {InvalidDrafterError} from "../../errors.js";
import {ChainDrafter} from "./ChainDrafter.js";
import {CrossTokenizerDrafter} from "./CrossTokenizerDrafter.js";
import type {Drafter} from "./Drafter.js";
import {ModelDrafter} from "./ModelDrafter.js";
import {NgramDrafter} from "./NgramDrafter.js";
import {type DrafterSpec, drafterLabel, parseDrafterSpec, type SingleDrafterSpec} from "./parseDrafterSpec.js";
import {SuffixDrafter} from "./SuffixDrafter.js";

/**
 * A drafter for a spec (parsed, or text parsed here). `draft` is the draft model the `model` drafter
 * uses; a spec that names `model` without one is an InvalidDrafterError. A suffix drafter's cache
 * lives in the returned instance: reuse the instance to share it across generations.
 */
export function createDrafter(spec: DrafterSpec | string, draft: ModelBackend | undefined, field = "drafter"): Drafter {
    const parsed = typeof spec === "string" ? parseDrafterSpec(spec, field) : spec;
    const single = (member: SingleDrafterSpec): Drafter => {
        switch (member.kind) {
            case "model":
                if (draft == null) throw new InvalidDrafterError(`"${drafterLabel(member)}" needs a draft model`, field);
                return member.retokenize === true ? new CrossTokenizerDrafter(draft) : new ModelDrafter(draft);
            case "ngram":
                return new NgramDrafter(member);
            case "suffix":
                return new SuffixDrafter(member);
        }
    };
    return parsed.kind === "chain" ? new ChainDrafter(parsed.members.map(single)) : single(parsed);
}
