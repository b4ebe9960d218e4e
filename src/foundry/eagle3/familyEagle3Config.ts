import {InvalidInputError} from "../../errors.js";
import type {LlamaConfig} from "../model/LlamaConfig.js";
import type {Eagle3Config} from "./Eagle3Config.js";

export interface Eagle3HeadShape {
    /** Head width d; default the target's. */
    readonly embeddingLength?: number;
    readonly headCount?: number;
    readonly feedForwardLength?: number;
    /** Target layer ids whose inputs feed fc; default low, middle and high: [1, ⌊n/2⌋, n − 1]. */
    readonly targetLayers?: readonly [number, number, number];
}

/**
 * The head for a llama target: the target's vocabulary, context, norm ε and RoPE base, and by default
 * its width, heads and feed-forward size. The default layers are the inputs of layers 1, ⌊n/2⌋ and
 * n − 1 (for the 4-layer family target: [1, 2, 3], the outputs of its first three blocks). llama.cpp's
 * converter default [2, n/2, n − 3] assumes a deep target, and the final hidden state (id n) needs a
 * target graph that exposes it, which LLM_ARCH_LLAMA does not.
 */
export function familyEagle3Config(target: LlamaConfig, shape: Eagle3HeadShape = {}): Eagle3Config {
    const n = target.blockCount;
    if (n < 2) throw new InvalidInputError(`the target needs at least 2 layers, has ${n}`, "target");
    const targetLayers = shape.targetLayers ?? [1, Math.floor(n / 2), n - 1];
    for (const id of targetLayers)
        if (id >= n) throw new InvalidInputError(`layer id ${id} is not below the target's ${n} layers`, "targetLayers");
    const embeddingLength = shape.embeddingLength ?? target.embeddingLength;
    const headCount = shape.headCount ?? target.headCount;
    return {
        targetLayers: [targetLayers[0], targetLayers[1], targetLayers[2]],
        targetHiddenSize: target.embeddingLength,
        vocabularySize: target.vocabularySize,
        embeddingLength,
        headCount,
        headCountKv: headCount,
        feedForwardLength: shape.feedForwardLength ?? target.feedForwardLength,
        contextLength: target.contextLength,
        rmsNormEpsilon: target.rmsNormEpsilon,
        ropeFreqBase: target.ropeFreqBase
    };
}
