import {InvalidInputError} from "../../errors.js";

/** Optimiser, schedule and batching settings of a training run; all part of a checkpoint. */
export interface TrainingOptions {
    /** Seed of the batch sampler (the weights have their own initialisation seed). */
    readonly seed: number;
    /** Peak learning rate, reached at the end of warm-up. */
    readonly learningRate: number;
    /** Steps of linear warm-up from 0 to the peak. */
    readonly warmupSteps: number;
    /** Steps of the whole run: the cosine decay ends here. */
    readonly totalSteps: number;
    /** The learning rate decays to learningRate × this. */
    readonly minimumLearningRateRatio: number;
    /** Decoupled (AdamW) weight decay of the matrices; norm gains are never decayed. */
    readonly weightDecay: number;
    readonly beta1: number;
    readonly beta2: number;
    readonly epsilon: number;
    /** Largest global L2 norm of the gradient; larger gradients are scaled down to it. */
    readonly gradientClip: number;
    /** Sequences per step. */
    readonly batchSize: number;
    /** Tokens per sequence fed to the model (each also predicts one more). */
    readonly sequenceLength: number;
}

export const defaultTrainingOptions: Omit<TrainingOptions, "seed" | "totalSteps"> = {
    learningRate: 3e-3,
    warmupSteps: 100,
    minimumLearningRateRatio: 0.1,
    weightDecay: 0.1,
    beta1: 0.9,
    beta2: 0.95,
    epsilon: 1e-8,
    gradientClip: 1,
    batchSize: 8,
    sequenceLength: 128
};

/** Throws an InvalidInputError naming the first out-of-range option. */
export function checkTrainingOptions(options: TrainingOptions): void {
    const integers: (keyof TrainingOptions)[] = ["seed", "warmupSteps", "totalSteps", "batchSize", "sequenceLength"];
    for (const key of integers)
        if (!Number.isSafeInteger(options[key]) || options[key] < 0)
            throw new InvalidInputError(`must be a non-negative integer, got ${options[key]}`, key);
    for (const key of ["totalSteps", "batchSize", "sequenceLength"] as const)
        if (options[key] < 1) throw new InvalidInputError(`must be at least 1, got ${options[key]}`, key);
    const positive: (keyof TrainingOptions)[] = ["learningRate", "epsilon", "gradientClip"];
    for (const key of positive)
        if (!(options[key] > 0) || !Number.isFinite(options[key]))
            throw new InvalidInputError(`must be a finite positive number, got ${options[key]}`, key);
    const fractions: (keyof TrainingOptions)[] = ["minimumLearningRateRatio", "beta1", "beta2"];
    for (const key of fractions)
        if (!(options[key] >= 0 && options[key] <= 1)) throw new InvalidInputError(`must be in [0, 1], got ${options[key]}`, key);
    if (!(options.weightDecay >= 0) || !Number.isFinite(options.weightDecay))
        throw new InvalidInputError(`must be a finite number >= 0, got ${options.weightDecay}`, "weightDecay");
}
