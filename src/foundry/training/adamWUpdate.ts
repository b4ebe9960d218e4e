import type {LlamaWeights} from "../model/LlamaWeights.js";
import {tensorOf} from "../model/LlamaWeights.js";
import type {TrainingOptions} from "./TrainingOptions.js";

export interface AdamWMoments {
    readonly first: LlamaWeights;
    readonly second: LlamaWeights;
}

/**
 * One AdamW step (Loshchilov & Hutter) in place: m ← β1·m + (1−β1)·g, v ← β2·v + (1−β2)·g²,
 * w ← w − lr·(m̂ / (sqrt(v̂) + ε) + λ·w) with bias-corrected m̂, v̂ for 1-based `stepNumber`.
 * Decay applies to matrices only: shrinking RMSNorm gains towards 0 has no regularising meaning.
 */
export function adamWUpdate(
    weights: LlamaWeights,
    gradients: LlamaWeights,
    moments: AdamWMoments,
    stepNumber: number,
    learningRate: number,
    options: Pick<TrainingOptions, "beta1" | "beta2" | "epsilon" | "weightDecay">,
    isMatrix: (name: string) => boolean
): void {
    const firstCorrection = 1 - options.beta1 ** stepNumber;
    const secondCorrection = 1 - options.beta2 ** stepNumber;
    for (const [name, values] of weights) {
        const gradient = tensorOf(gradients, name);
        const first = tensorOf(moments.first, name);
        const second = tensorOf(moments.second, name);
        const decay = isMatrix(name) ? options.weightDecay : 0;
        for (let i = 0; i < values.length; i++) {
            const g = gradient[i];
            first[i] = options.beta1 * first[i] + (1 - options.beta1) * g;
            second[i] = options.beta2 * second[i] + (1 - options.beta2) * g * g;
            const update = first[i] / firstCorrection / (Math.sqrt(second[i] / secondCorrection) + options.epsilon);
            values[i] -= learningRate * (update + decay * values[i]);
        }
    }
}
