import type {ExportType} from "../exportLlamaGguf.js";

/** One family member trained from random weights with llama-finetune. */
export interface TrainedMemberRecipe {
    readonly kind: "trained";
    readonly name: string;
    readonly role: string;
    /** d,layers,heads,ff. */
    readonly shape: string;
    readonly mixture: "balanced" | "english-heavy";
    /** A wall-clock budget (a calibration run sizes the plan to it)… */
    readonly seconds?: number;
    /** …or a fixed number of optimizer steps, independent of how busy the machine is. */
    readonly steps?: number;
    readonly epochs: number;
    readonly learningRate: number;
    readonly minimumLearningRate: number;
    readonly seed: number;
}

/** One member made by re-encoding another. */
export interface QuantizedMemberRecipe {
    readonly kind: "quantized";
    readonly name: string;
    readonly role: string;
    readonly source: string;
    readonly type: ExportType;
}

export type MemberRecipe = TrainedMemberRecipe | QuantizedMemberRecipe;

/**
 * The reference family. The corpus seed is fixed so every member and every rebuild sees the same
 * documents and one shared test split. Budgets are wall-clock seconds on the project's 2-core
 * machine (llama-finetune sizes each run to fit after a calibration run): the target takes the bulk,
 * the drafts (≈ 13× fewer parameters) have fixed step counts, a few minutes each. Two threads are
 * ≈ 1.5× faster than one on an idle 2-core machine, but ggml's threads wait on each other at every
 * operation, so any other busy process slows a 2-thread run several-fold; on a shared machine use
 * `--threads 1` (the shipped target was trained so).
 */
export const familyRecipe = {
    corpus: {seed: 7, samples: 60_000, testProblems: 50},
    contextLength: 256,
    members: [
        {
            kind: "trained", name: "target", role: "the verifier: largest model trained in the time budget",
            shape: "256,4,4,768", mixture: "balanced", seconds: 4200, epochs: 2, learningRate: 6e-4, minimumLearningRate: 3e-5, seed: 1
        },
        {
            kind: "trained", name: "draft", role: "draft for target, same balanced mixture",
            shape: "96,2,2,256", mixture: "balanced", steps: 20_000, epochs: 2, learningRate: 1e-3, minimumLearningRate: 5e-5, seed: 2
        },
        {
            kind: "trained", name: "draft-skewed", role: "draft for target trained on 90% English (language-disparity experiments)",
            shape: "96,2,2,256", mixture: "english-heavy", steps: 20_000, epochs: 2, learningRate: 1e-3, minimumLearningRate: 5e-5, seed: 2
        },
        {
            kind: "quantized", name: "target-q8_0", role: "Q8_0 copy of target, the quantized-draft deployment pattern",
            source: "target", type: "q8_0"
        }
    ] satisfies MemberRecipe[] as MemberRecipe[]
};
