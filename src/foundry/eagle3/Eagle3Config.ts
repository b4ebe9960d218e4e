import {InvalidInputError} from "../../errors.js";

/**
 * The shape of an EAGLE-3 head as llama.cpp's `eagle3` architecture reads it: one decoder layer of
 * width embeddingLength whose attention reads the 2·embeddingLength concat [RMSNorm(token embedding),
 * RMSNorm(g)], and an fc encoder that maps the concatenated hidden states of three target layers
 * (3·targetHiddenSize) to g. targetLayers are the target layer ids whose INPUT llama.cpp extracts
 * (llama_set_embeddings_layer_inp); an id equal to the target's layer count would read the final
 * hidden state, which a plain llama target does not expose, so the ids stay below it.
 */
export interface Eagle3Config {
    readonly targetLayers: readonly [number, number, number];
    readonly targetHiddenSize: number;
    readonly vocabularySize: number;
    readonly embeddingLength: number;
    readonly headCount: number;
    readonly headCountKv: number;
    readonly feedForwardLength: number;
    readonly contextLength: number;
    readonly rmsNormEpsilon: number;
    readonly ropeFreqBase: number;
}

export function eagle3HeadDimension(config: Eagle3Config): number {
    return config.embeddingLength / config.headCount;
}

/** Width of the fc encoder's input: the three target layers' hidden states side by side. */
export function eagle3FeatureWidth(config: Eagle3Config): number {
    return config.targetLayers.length * config.targetHiddenSize;
}

/** Throws an InvalidInputError naming the first field that llama.cpp's eagle3 loader (or the maths) would reject. */
export function checkEagle3Config(config: Eagle3Config): void {
    const positive: (keyof Eagle3Config)[] = [
        "targetHiddenSize",
        "vocabularySize",
        "embeddingLength",
        "headCount",
        "headCountKv",
        "feedForwardLength",
        "contextLength"
    ];
    for (const key of positive)
        if (!Number.isSafeInteger(config[key]) || (config[key] as number) <= 0)
            throw new InvalidInputError(`must be a positive integer, got ${String(config[key])}`, key);
    if (config.targetLayers.length !== 3)
        throw new InvalidInputError(`needs exactly 3 layer ids, got ${config.targetLayers.length}`, "targetLayers");
    for (const id of config.targetLayers)
        if (!Number.isSafeInteger(id) || id < 0)
            throw new InvalidInputError(`layer ids must be non-negative integers, got ${id}`, "targetLayers");
    if (config.embeddingLength % config.headCount !== 0)
        throw new InvalidInputError(
            `embeddingLength ${config.embeddingLength} is not a multiple of headCount ${config.headCount}`,
            "headCount"
        );
    if (eagle3HeadDimension(config) % 2 !== 0)
        throw new InvalidInputError("the head dimension must be even for rotary embeddings", "headCount");
    if (config.headCount % config.headCountKv !== 0)
        throw new InvalidInputError(`headCount ${config.headCount} is not a multiple of headCountKv ${config.headCountKv}`, "headCountKv");
    if (!(config.rmsNormEpsilon > 0)) throw new InvalidInputError("must be positive", "rmsNormEpsilon");
    if (!(config.ropeFreqBase > 0)) throw new InvalidInputError("must be positive", "ropeFreqBase");
}
