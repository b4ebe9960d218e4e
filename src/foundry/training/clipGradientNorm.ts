import type {LlamaWeights} from "../model/LlamaWeights.js";

/**
 * Scales all gradients in place so their global L2 norm is at most `maximum` and returns the norm
 * before clipping (worth logging: a norm that keeps hitting the clip means the rate is too high).
 */
export function clipGradientNorm(gradients: LlamaWeights, maximum: number): number {
    let sumOfSquares = 0;
    for (const tensor of gradients.values()) for (let i = 0; i < tensor.length; i++) sumOfSquares += tensor[i] * tensor[i];
    const norm = Math.sqrt(sumOfSquares);
    if (norm > maximum) {
        const scale = maximum / norm;
        for (const tensor of gradients.values()) for (let i = 0; i < tensor.length; i++) tensor[i] *= scale;
    }
    return norm;
}
