import {InvalidInputError} from "../../errors.js";
import type {LlamaShape} from "../../gguf/randomLlamaModel.js";

/**
 * The shape of a llama-architecture model as the reference implementation and llama.cpp see it:
 * the free dimensions the fixture generator also uses (embeddingLength = d_model; headCountKv below
 * headCount is grouped-query attention, query head h reading kv head ⌊h / (headCount / headCountKv)⌋),
 * plus the vocabulary and numerics.
 */
export interface LlamaConfig extends LlamaShape {
    readonly vocabularySize: number;
    readonly rmsNormEpsilon: number;
    readonly ropeFreqBase: number;
    /** Logits from token_embd.weight (no output.weight tensor), as llama.cpp does when output.weight is absent. */
    readonly tiedOutput: boolean;
}

export function headDimension(config: LlamaConfig): number {
    return config.embeddingLength / config.headCount;
}

/** Throws an InvalidInputError naming the first field that llama.cpp (or the maths) would not accept. */
export function checkLlamaConfig(config: LlamaConfig): void {
    const positive: (keyof LlamaConfig)[] = [
        "vocabularySize",
        "embeddingLength",
        "blockCount",
        "headCount",
        "headCountKv",
        "feedForwardLength",
        "contextLength"
    ];
    for (const key of positive)
        if (!Number.isSafeInteger(config[key]) || (config[key] as number) <= 0)
            throw new InvalidInputError(`must be a positive integer, got ${config[key]}`, key);
    if (config.embeddingLength % config.headCount !== 0)
        throw new InvalidInputError(
            `embeddingLength ${config.embeddingLength} is not a multiple of headCount ${config.headCount}`,
            "headCount"
        );
    if (headDimension(config) % 2 !== 0) throw new InvalidInputError("the head dimension must be even for rotary embeddings", "headCount");
    if (config.headCount % config.headCountKv !== 0)
        throw new InvalidInputError(`headCount ${config.headCount} is not a multiple of headCountKv ${config.headCountKv}`, "headCountKv");
    if (!(config.rmsNormEpsilon > 0) || !(config.ropeFreqBase > 0))
        throw new InvalidInputError("must be positive", config.rmsNormEpsilon > 0 ? "ropeFreqBase" : "rmsNormEpsilon");
}
