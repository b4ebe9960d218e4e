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
    /**
     * A first stage on another mixture, from random weights, before the main one continues from its
     * result: the target's copy-drill warm-up, which forms the copying mechanism the tasks need.
     */
    readonly warmUp?: WarmUpRecipe;
}

export interface WarmUpRecipe {
    readonly mixture: "copy-drill";
    readonly steps: number;
    /** Constant for the whole stage (one epoch). */
    readonly learningRate: number;
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
 * documents and one shared test split. Every run is a fixed number of optimizer steps, so a rebuild
 * does the same work on any machine and thread count (two threads are ≈ 1.5× faster on an idle 2-core
 * machine, but ggml's threads wait on each other at every operation, so any other busy process slows
 * a 2-thread run several-fold; this family was trained at one thread per run, two runs at a time).
 *
 * The target is 1.1M parameters, not the 3.5M of the first families: a model this size copies a
 * request's numbers only after a phase change (a copy-drill warm-up of ≈ 16,000 steps, then ≈ 20,000
 * more on tasks mixed with drills; BENCHMARKS.md "copying"), and the 3.5M shape, ≈ 2× slower per step,
 * had not finished the warm-up alone after 65 minutes. So the largest target that learns its tasks in
 * the ≈ 90-minute budget is this one; the drafts are ≈ 10× smaller.
 */
export const familyRecipe = {
    corpus: {seed: 7, samples: 60_000, testProblems: 50},
    contextLength: 256,
    members: [
        {
            kind: "trained", name: "target", role: "the verifier: largest model trained to copy its prompt in the time budget",
            shape: "128,4,4,512", mixture: "balanced", steps: 36_000, epochs: 2, learningRate: 1e-3, minimumLearningRate: 3e-4, seed: 1,
            warmUp: {mixture: "copy-drill", steps: 16_000, learningRate: 1e-3}
        },
        {
            kind: "trained", name: "draft", role: "draft for target, same balanced mixture",
            shape: "64,2,2,112", mixture: "balanced", steps: 30_000, epochs: 2, learningRate: 2e-3, minimumLearningRate: 1e-4, seed: 2
        },
        {
            kind: "trained", name: "draft-skewed", role: "draft for target trained on 90% English (language-disparity experiments)",
            shape: "64,2,2,112", mixture: "english-heavy", steps: 30_000, epochs: 2, learningRate: 2e-3, minimumLearningRate: 1e-4, seed: 2
        },
        {
            kind: "quantized", name: "target-q8_0", role: "Q8_0 copy of target, the quantized-draft deployment pattern",
            source: "target", type: "q8_0"
        }
    ] satisfies MemberRecipe[] as MemberRecipe[]
};
