import {Eagle3HeadBackend} from "../../backend/Eagle3HeadBackend.js";
import type {ModelBackend} from "../../backend/ModelBackend.js";
import {InvalidDrafterError} from "../../errors.js";
import {ChainDrafter} from "./ChainDrafter.js";
import {CrossTokenizerDrafter} from "./CrossTokenizerDrafter.js";
import type {Drafter} from "./Drafter.js";
import {Eagle3Drafter} from "./Eagle3Drafter.js";
import {ModelDrafter} from "./ModelDrafter.js";
import {NgramDrafter} from "./NgramDrafter.js";
import {type DrafterSpec, drafterLabel, parseDrafterSpec, type SingleDrafterSpec} from "./parseDrafterSpec.js";
import {SuffixDrafter} from "./SuffixDrafter.js";

/**
 * A drafter for a spec (parsed, or text parsed here). `draft` is the draft model the `model` drafter
 * uses, or the EAGLE-3 head the `eagle3` drafter uses (`model` with a head drafts with it as `eagle3`);
 * a spec that names either without one is an InvalidDrafterError. A suffix drafter's cache
 * lives in the returned instance: reuse the instance to share it across generations.
 */
export function createDrafter(spec: DrafterSpec | string, draft: ModelBackend | undefined, field = "drafter"): Drafter {
    const parsed = typeof spec === "string" ? parseDrafterSpec(spec, field) : spec;
    const single = (member: SingleDrafterSpec): Drafter => {
        switch (member.kind) {
            case "model":
                if (draft == null) throw new InvalidDrafterError(`"${drafterLabel(member)}" needs a draft model`, field);
                // An EAGLE-3 head given as the draft model drafts as one (it cannot decode on its own).
                if (draft instanceof Eagle3HeadBackend && member.retokenize !== true) return new Eagle3Drafter(draft);
                return member.retokenize === true ? new CrossTokenizerDrafter(draft) : new ModelDrafter(draft);
            case "eagle3":
                if (!(draft instanceof Eagle3HeadBackend))
                    throw new InvalidDrafterError(
                        draft == null
                            ? `"eagle3" needs an EAGLE-3 head as the draft GGUF`
                            : `"eagle3" needs an EAGLE-3 head (general.architecture eagle3) as the draft GGUF; the draft given is a model: use "model"`,
                        field
                    );
                return new Eagle3Drafter(draft);
            case "ngram":
                return new NgramDrafter(member);
            case "suffix":
                return new SuffixDrafter(member);
        }
    };
    return parsed.kind === "chain" ? new ChainDrafter(parsed.members.map(single)) : single(parsed);
}
