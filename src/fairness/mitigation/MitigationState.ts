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
    /** Sequences drawn per group and mini-batch (Algorithm 1's |B_T|; the paper uses 8). */
    readonly batchPerTask: number;
    /** Mini-batches per group averaged into one update (seed 003 D.1's GRAD_ACCUM = 4; 1 = no accumulation). */
    readonly gradientAccumulation: number;
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
 * Defaults. batchPerTask 8 and gradientClip 1 are seed 003's (§8.3 "a batch size of B = 8", D.1
 * "CLIP=1.0"). The rest are not published there and were chosen on the family's draft-skewed
 * (BENCHMARKS.md): 60 steps fit a CPU run; learning rate 3e-4 because at 1e-3 the best-served language
 * lost 4 points of greedy acceptance and at 3e-4 it lost 0.3 while U still fell 80% (seed 003 D.1
 * uses LR=1e-4 with GRAD_ACCUM=4: SEED_003_MITIGATION); warm-up, cosine decay and no weight decay are
 * this trainer's usual schedule; no accumulation keeps a step one mini-batch per group.
 */
export const defaultMitigationOptions: Omit<MitigationOptions, "method" | "seed"> = {
    steps: 60,
    batchPerTask: 8,
    gradientAccumulation: 1,
    learningRate: 3e-4,
    warmupSteps: 5,
    minimumLearningRateRatio: 0.1,
    weightDecay: 0,
    gradientClip: 1
};

/**
 * Seed 003 D.1's "Default hyperparameters (reproducible starting point)": "MINI_BATCH_SIZE=8;
 * MAX_GEN_TOKENS=64; LR=1e-4; GRAD_ACCUM=4; CLIP=1.0; acceptance draft width γ=5 in the estimator",
 * continuations the teacher "generates ... (sampling)". Its STEPS ("10,00" as printed) is ambiguous
 * and its schedule is not published, so steps and warm-up keep this tool's defaults.
 */
export const SEED_003_MITIGATION = {
    batchPerTask: 8,
    gradientAccumulation: 4,
    learningRate: 1e-4,
    gradientClip: 1,
    maxTokens: 64,
    gamma: 5,
    continuations: "target-sampled"
} as const;

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
    if (!Number.isInteger(options.gradientAccumulation) || options.gradientAccumulation < 1)
        throw new InvalidInputError(`must be a positive integer, got ${options.gradientAccumulation}`, "gradientAccumulation");
    const schedule: TrainingOptions = {
        ...defaultTrainingOptions,
        seed: options.seed,
        totalSteps: options.steps,
        learningRate: options.learningRate,
        warmupSteps: options.warmupSteps,
        minimumLearningRateRatio: options.minimumLearningRateRatio,
        weightDecay: options.weightDecay,
        gradientClip: options.gradientClip,
        batchSize: options.batchPerTask * options.gradientAccumulation,
        sequenceLength: config.contextLength
    };
    checkTrainingOptions(schedule);
    return {
        config,
        options,
        schedule,
        weights,
        moments: {first: zeroLlamaWeights(config), second: zeroLlamaWeights(config)},
        step: 0,
        random: new Random(options.seed),
        rope: new RopeTable(config.contextLength, headDimension(config), config.ropeFreqBase)
    };
}
