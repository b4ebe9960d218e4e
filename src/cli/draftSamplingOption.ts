import {Option} from "commander";

export type DraftSampling = "sample" | "greedy";

/** Help of `--draft-sampling` on the tuning commands: what each mode is and whose default it is. */
export const DRAFT_SAMPLING_HELP =
    "how the draft model proposes: sample (default: from its own sampler row, verified with q, the standard speculative sampling;" +
    " at temperature 0 it is the argmax) or greedy (its argmax, verified as a q-less proposal, as the Fuzzy SD paper's " +
    "experiments draft: 'using greedy decoding to generate the candidate sequences')";

/** `--draft-sampling sample|greedy`, checked by commander; absent, the caller takes sample. */
export function draftSamplingOption(help = DRAFT_SAMPLING_HELP): Option {
    return new Option("--draft-sampling <mode>", help).choices(["sample", "greedy"] satisfies DraftSampling[]);
}
