import {InvalidInputError} from "../errors.js";

export type DraftSampling = "sample" | "greedy";

/** Help of `--draft-sampling` on the tuning commands: what each mode is and whose default it is. */
export const DRAFT_SAMPLING_HELP =
    "how the draft model proposes: sample (default: from its own sampler row, verified with q, the standard speculative sampling;" +
    " at temperature 0 it is the argmax) or greedy (its argmax, verified as a q-less proposal, as the Fuzzy SD paper's " +
    "experiments draft: 'using greedy decoding to generate the candidate sequences')";

/** `--draft-sampling` as text → the mode; absent → sample. */
export function parseDraftSampling(text: string | undefined, flag = "--draft-sampling"): DraftSampling {
    if (text === undefined || text === "sample") return "sample";
    if (text === "greedy") return "greedy";
    throw new InvalidInputError(`must be "sample" or "greedy", got "${text}"`, flag);
}
