import {InvalidInputError} from "../errors.js";
import {ByteTokenizer, SpmTokenType, type TokenizerEntry} from "./ByteTokenizer.js";
import {GgmlTensorType} from "./GgmlTensorType.js";
import type {GgufMetadataValue} from "./GgufMetadataValue.js";
import type {GgufVocabulary} from "./GgufVocabulary.js";
import {GgufValueType} from "./GgufValueType.js";

/** The shape of a llama-architecture model, as llama.cpp reads it from `llama.*` keys. */
export interface LlamaHyperparameters {
    readonly contextLength: number;
    /** d_model. */
    readonly embeddingLength: number;
    /** Number of transformer blocks. */
    readonly blockCount: number;
    /** Hidden size of the SwiGLU feed-forward network. */
    readonly feedForwardLength: number;
    readonly headCount: number;
    /** Key/value heads (grouped-query attention when below headCount). */
    readonly headCountKv: number;
    readonly layerNormRmsEpsilon: number;
    readonly ropeFreqBase: number;
    readonly vocabularySize: number;
}

export interface GgufKeyValue {
    readonly key: string;
    readonly type: GgufValueType;
    readonly value: GgufMetadataValue;
}

/** llama_ftype values for `general.file_type` (what most weights are stored as). */
export const fileTypeByTensorType: Record<GgmlTensorType, number> = {
    [GgmlTensorType.F32]: 0,
    [GgmlTensorType.F16]: 1,
    [GgmlTensorType.Q8_0]: 7
};

/**
 * The metadata a llama-architecture GGUF needs: `general.*`, the `llama.*` hyperparameters and the
 * `tokenizer.ggml.*` vocabulary: a ByteTokenizer's SPM entries (spmVocabulary) or any other
 * GgufVocabulary (a real family's BPE tokenizer, hfBpeVocabulary). Checks the shape constraints
 * llama.cpp relies on.
 * `paddingTokens` appends that many unused rows after the tokenizer's, named `[PAD<id>]` with type
 * UNUSED as llama.cpp's converter writes the ids a checkpoint has beyond its tokenizer (Qwen2.5 7B:
 * 152,064 rows for a 151,665-token tokenizer).
 */
export function llamaGgufMetadata(
    hyperparameters: LlamaHyperparameters,
    tokenizer: ByteTokenizer | GgufVocabulary,
    options: {name?: string; weightType?: GgmlTensorType; paddingTokens?: number} = {}
): GgufKeyValue[] {
    const paddingTokens = options.paddingTokens ?? 0;
    if (!Number.isSafeInteger(paddingTokens) || paddingTokens < 0)
        throw new InvalidInputError(`must be a non-negative integer, got ${paddingTokens}`, "paddingTokens");
    const vocabulary = tokenizer instanceof ByteTokenizer ? spmVocabulary(tokenizer) : tokenizer;
    checkHyperparameters(hyperparameters, vocabulary.size + paddingTokens);
    const h = hyperparameters;
    const headDimension = h.embeddingLength / h.headCount;
    return [
        {key: "general.architecture", type: GgufValueType.String, value: "llama"},
        {key: "general.name", type: GgufValueType.String, value: options.name ?? "specgate-llama"},
        {key: "general.file_type", type: GgufValueType.Uint32, value: fileTypeByTensorType[options.weightType ?? GgmlTensorType.F32]},
        {key: "llama.context_length", type: GgufValueType.Uint32, value: h.contextLength},
        {key: "llama.embedding_length", type: GgufValueType.Uint32, value: h.embeddingLength},
        {key: "llama.block_count", type: GgufValueType.Uint32, value: h.blockCount},
        {key: "llama.feed_forward_length", type: GgufValueType.Uint32, value: h.feedForwardLength},
        {key: "llama.attention.head_count", type: GgufValueType.Uint32, value: h.headCount},
        {key: "llama.attention.head_count_kv", type: GgufValueType.Uint32, value: h.headCountKv},
        {key: "llama.attention.layer_norm_rms_epsilon", type: GgufValueType.Float32, value: h.layerNormRmsEpsilon},
        {key: "llama.rope.freq_base", type: GgufValueType.Float32, value: h.ropeFreqBase},
        {key: "llama.rope.dimension_count", type: GgufValueType.Uint32, value: headDimension},
        {key: "llama.vocab_size", type: GgufValueType.Uint32, value: h.vocabularySize},
        ...vocabulary.metadata(paddingTokens)
    ];
}

/**
 * A ByteTokenizer as an SPM ("llama") vocabulary: add_space_prefix off, BOS added by llama.cpp's
 * add_special path only, never EOS.
 */
export function spmVocabulary(tokenizer: ByteTokenizer): GgufVocabulary {
    return {
        size: tokenizer.size,
        metadata(paddingTokens: number): GgufKeyValue[] {
            const vocabulary = [...tokenizer.vocabulary, ...paddingEntries(tokenizer.size, paddingTokens)];
            return [
                {key: "tokenizer.ggml.model", type: GgufValueType.String, value: "llama"},
                {
                    key: "tokenizer.ggml.tokens",
                    type: GgufValueType.Array,
                    value: {itemType: GgufValueType.String, items: vocabulary.map((entry) => entry.text)}
                },
                {
                    key: "tokenizer.ggml.scores",
                    type: GgufValueType.Array,
                    value: {itemType: GgufValueType.Float32, items: vocabulary.map((entry) => entry.score)}
                },
                {
                    key: "tokenizer.ggml.token_type",
                    type: GgufValueType.Array,
                    value: {itemType: GgufValueType.Int32, items: vocabulary.map((entry) => entry.type)}
                },
                {key: "tokenizer.ggml.bos_token_id", type: GgufValueType.Uint32, value: ByteTokenizer.bosId},
                {key: "tokenizer.ggml.eos_token_id", type: GgufValueType.Uint32, value: ByteTokenizer.eosId},
                {key: "tokenizer.ggml.unknown_token_id", type: GgufValueType.Uint32, value: ByteTokenizer.unknownId},
                {key: "tokenizer.ggml.add_bos_token", type: GgufValueType.Bool, value: true},
                {key: "tokenizer.ggml.add_eos_token", type: GgufValueType.Bool, value: false},
                {key: "tokenizer.ggml.add_space_prefix", type: GgufValueType.Bool, value: false}
            ];
        }
    };
}

/** `count` unused tokens `[PAD<id>]` from id `first` on. */
export function paddingEntries(first: number, count: number): TokenizerEntry[] {
    return Array.from({length: count}, (_unused, index) => ({text: `[PAD${first + index}]`, score: 0, type: SpmTokenType.Unused}));
}

function checkHyperparameters(h: LlamaHyperparameters, tokenCount: number): void {
    const positive: (keyof LlamaHyperparameters)[] = [
        "contextLength",
        "embeddingLength",
        "blockCount",
        "feedForwardLength",
        "headCount",
        "headCountKv",
        "vocabularySize"
    ];
    for (const key of positive)
        if (!Number.isSafeInteger(h[key]) || h[key] <= 0) throw new InvalidInputError(`must be a positive integer, got ${h[key]}`, key);
    if (h.embeddingLength % h.headCount !== 0)
        throw new InvalidInputError(`embeddingLength ${h.embeddingLength} is not a multiple of headCount ${h.headCount}`, "headCount");
    if ((h.embeddingLength / h.headCount) % 2 !== 0)
        throw new InvalidInputError("the head dimension must be even for rotary embeddings", "headCount");
    if (h.headCount % h.headCountKv !== 0)
        throw new InvalidInputError(`headCount ${h.headCount} is not a multiple of headCountKv ${h.headCountKv}`, "headCountKv");
    if (!(h.layerNormRmsEpsilon > 0) || !(h.ropeFreqBase > 0))
        throw new InvalidInputError("layerNormRmsEpsilon and ropeFreqBase must be positive", "layerNormRmsEpsilon");
    if (h.vocabularySize !== tokenCount)
        throw new InvalidInputError(`vocabularySize ${h.vocabularySize} differs from the ${tokenCount} tokens written`, "vocabularySize");
}
