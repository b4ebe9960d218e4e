import {InvalidInputError} from "../errors.js";
import {GgmlTensorType, q8_0BlockSize} from "./GgmlTensorType.js";
import type {GgufReader} from "./GgufReader.js";
import type {LlamaHyperparameters} from "./llamaGgufMetadata.js";

/** The free dimensions of a widened twin; everything else (vocabulary, context, RoPE) is the source's. */
export interface WidenedShape {
    /** Residual width D (d_model), at least the source's. */
    readonly embeddingLength: number;
    /** Transformer blocks, at least the source's. */
    readonly blockCount: number;
    /** Query heads; the head size is the source's, so this is D / (source head size). */
    readonly headCount: number;
    /** SwiGLU hidden units, at least the source's. */
    readonly feedForwardLength: number;
}

/** Where the source's parts sit in the twin. */
export interface WidenPlacement {
    /** Twin block of each source block (spread evenly, in order). */
    readonly layers: readonly number[];
    /** Twin key/value head of each source key/value head (spread evenly, in order). */
    readonly kvHeads: readonly number[];
    /** Twin query head of each source query head: its key/value head's group, same offset inside it. */
    readonly heads: readonly number[];
}

/** Names used in the error messages: a CLI passes its flags. */
export interface WidenFieldNames {
    readonly source: string;
    readonly shape: string;
    readonly perturb: string;
}

/** The shape's parts as `d,layers,heads,ff` names them. */
const shapeLabels = [
    ["embeddingLength", "d"],
    ["blockCount", "layers"],
    ["headCount", "heads"],
    ["feedForwardLength", "ff"]
] as const;

/** The llama.* hyperparameters of a source GGUF, refusing architectures the twin cannot reproduce. */
export function readSourceHyperparameters(reader: GgufReader, field: string): LlamaHyperparameters {
    const architecture = reader.metadata.get("general.architecture")?.value;
    if (architecture !== "llama") throw new InvalidInputError(`a twin is built from a llama model, got ${String(architecture)}`, field);
    const number = (key: string, fallback?: number): number => {
        const value = reader.metadata.get(`llama.${key}`)?.value ?? fallback;
        if (typeof value !== "number" && typeof value !== "bigint") throw new InvalidInputError(`has no numeric llama.${key}`, field);
        return Number(value);
    };
    if (number("expert_count", 0) > 0) throw new InvalidInputError("mixture-of-experts models cannot be widened", field);
    const headCount = number("attention.head_count");
    const embeddingLength = number("embedding_length");
    const headSize = embeddingLength / headCount;
    for (const key of ["attention.key_length", "attention.value_length"])
        if (number(key, headSize) !== headSize)
            throw new InvalidInputError(`llama.${key} ${number(key)} differs from embedding/heads ${headSize}; not supported`, field);
    return {
        contextLength: number("context_length"),
        embeddingLength,
        blockCount: number("block_count"),
        feedForwardLength: number("feed_forward_length"),
        headCount,
        headCountKv: number("attention.head_count_kv", headCount),
        layerNormRmsEpsilon: number("attention.layer_norm_rms_epsilon"),
        ropeFreqBase: number("rope.freq_base", 10000),
        vocabularySize: reader.tensor("token_embd.weight").dimensions[1]
    };
}

/**
 * The twin's hyperparameters: the wider shape with the source's head size, key/value group size,
 * context, RoPE and vocabulary, and the epsilon scaled by d/D (see widenLlamaModel). Throws naming
 * `field` where the shape cannot hold the source.
 */
export function twinHyperparameters(
    source: LlamaHyperparameters,
    shape: WidenedShape,
    weightType: GgmlTensorType,
    field: string
): LlamaHyperparameters {
    for (const [key, label] of shapeLabels) {
        if (!Number.isSafeInteger(shape[key]) || shape[key] < 1)
            throw new InvalidInputError(`${label} must be a positive integer, got ${shape[key]}`, field);
        if (shape[key] < source[key])
            throw new InvalidInputError(`${label} ${shape[key]} is below the source's ${source[key]}; a twin only widens`, field);
    }
    const headSize = source.embeddingLength / source.headCount;
    if (shape.embeddingLength !== shape.headCount * headSize)
        throw new InvalidInputError(
            `keeps the source's head size ${headSize}, so heads must be embedding/${headSize}: ${shape.embeddingLength}/${headSize} = ${shape.embeddingLength / headSize}, got ${shape.headCount}`,
            field
        );
    const group = source.headCount / source.headCountKv;
    if (shape.headCount % group !== 0)
        throw new InvalidInputError(
            `heads ${shape.headCount} must be a multiple of the source's ${group} query heads per key/value head`,
            field
        );
    if (weightType === GgmlTensorType.Q8_0)
        for (const [key, label] of [shapeLabels[0], shapeLabels[3]])
            if (shape[key] % q8_0BlockSize !== 0)
                throw new InvalidInputError(`Q8_0 needs ${label} to be a multiple of ${q8_0BlockSize}, got ${shape[key]}`, field);
    return {
        ...source,
        ...shape,
        headCountKv: shape.headCount / group,
        layerNormRmsEpsilon: (source.layerNormRmsEpsilon * source.embeddingLength) / shape.embeddingLength
    };
}

/** Source blocks and heads spread evenly over the twin's, in order. */
export function widenPlacement(source: LlamaHyperparameters, twin: LlamaHyperparameters): WidenPlacement {
    const group = source.headCount / source.headCountKv;
    const kvHeads = spread(source.headCountKv, twin.headCountKv);
    return {
        layers: spread(source.blockCount, twin.blockCount),
        kvHeads,
        heads: Array.from({length: source.headCount}, (_unused, head) => kvHeads[Math.floor(head / group)] * group + (head % group))
    };
}

/** `count` distinct increasing slots among `slots` (slots >= count), evenly spaced from 0. */
function spread(count: number, slots: number): number[] {
    return Array.from({length: count}, (_unused, index) => Math.floor((index * slots) / count));
}
