import {InvalidInputError} from "../../errors.js";
import {checkLlamaConfig, headDimension, type LlamaConfig} from "../../foundry/model/LlamaConfig.js";
import {checkLlamaWeights, type LlamaWeights, zeroLlamaWeights} from "../../foundry/model/LlamaWeights.js";
import {RopeTable} from "../../foundry/model/RopeTable.js";
import type {AdamWMoments} from "../../foundry/training/adamWUpdate.js";
import {checkTrainingOptions, defaultTrainingOptions, type TrainingOptions} from "../../foundry/training/TrainingOptions.js";
import {Random} from "../../random/Random.js";
import type {MitigationMethod} from "./fairnessWeightedGradient.js";

export interface MitigationOptions {
    readonly method: MitigationMethod;
    readonly steps: number;
    /** Sequences drawn per group and step (Algorithm 1's |B_T|; the paper uses 8). */
    readonly batchPerTask: number;
    /** Peak AdamW learning rate. */
    readonly learningRate: number;
    readonly warmupSteps: number;
    /** The cosine decay ends at learningRate × this; 1 keeps the rate constant after warm-up. */
    readonly minimumLearningRateRatio: number;
    readonly weightDecay: number;
    readonly gradientClip: number;
    /** Seed of the mini-batch sampler: the same seed draws the same batches for every method. */
    readonly seed: number;
}

/**
 * Defaults measured on the family's draft-skewed (BENCHMARKS.md): at 1e-3 the best-served language
 * lost 4 points of greedy acceptance, at 3e-4 it lost 0.3 while U still fell 80%.
 */
export const defaultMitigationOptions: Omit<MitigationOptions, "method" | "seed"> = {
    steps: 60, batchPerTask: 8, learningRate: 3e-4, warmupSteps: 5, minimumLearningRateRatio: 0.1, weightDecay: 0, gradientClip: 1
};

/** What one corrective fine-tuning run carries from step to step. */
export interface MitigationState {
    readonly config: LlamaConfig;
    readonly options: MitigationOptions;
    /** The optimiser and schedule settings in the trainer's own terms (learningRateAt, adamWUpdate). */
    readonly schedule: TrainingOptions;
    readonly weights: LlamaWeights;
    readonly moments: AdamWMoments;
    step: number;
    readonly random: Random;
    readonly rope: RopeTable;
}

/** A fresh run from `weights` (taken over, not copied): zero moments, step 0, sampler seeded by options.seed. */
export function createMitigationState(config: LlamaConfig, weights: LlamaWeights, options: MitigationOptions): MitigationState {
    checkLlamaConfig(config);
    checkLlamaWeights(config, weights);
    if (options.method !== "scdf" && options.method !== "rebalance")
        throw new InvalidInputError(`must be "scdf" or "rebalance", got "${String(options.method)}"`, "method");
    const schedule: TrainingOptions = {
        ...defaultTrainingOptions,
        seed: options.seed,
        totalSteps: options.steps,
        learningRate: options.learningRate,
        warmupSteps: options.warmupSteps,
        minimumLearningRateRatio: options.minimumLearningRateRatio,
        weightDecay: options.weightDecay,
        gradientClip: options.gradientClip,
        batchSize: options.batchPerTask,
        sequenceLength: config.contextLength
    };
    checkTrainingOptions(schedule);
    return {
        config, options, schedule, weights,
        moments: {first: zeroLlamaWeights(config), second: zeroLlamaWeights(config)},
        step: 0,
        random: new Random(options.seed),
        rope: new RopeTable(config.contextLength, headDimension(config), config.ropeFreqBase)
    };
}
