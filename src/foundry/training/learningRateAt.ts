import type {TrainingOptions} from "./TrainingOptions.js";

/**
 * The learning rate of step `step` (0-based): linear warm-up to the peak over warmupSteps (step 0
 * already gets peak/warmupSteps, so no step is wasted at rate 0), then cosine decay from the peak to
 * peak × minimumLearningRateRatio at totalSteps, and that minimum afterwards.
 */
export function learningRateAt(step: number, options: TrainingOptions): number {
    const peak = options.learningRate;
    if (step < options.warmupSteps) return (peak * (step + 1)) / options.warmupSteps;
    const minimum = peak * options.minimumLearningRateRatio;
    const decaySteps = options.totalSteps - options.warmupSteps;
    if (decaySteps <= 0 || step >= options.totalSteps) return minimum;
    const progress = (step - options.warmupSteps) / decaySteps;
    return minimum + 0.5 * (peak - minimum) * (1 + Math.cos(Math.PI * progress));
}
