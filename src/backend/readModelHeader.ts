import {ModelLoadError} from "../errors.js";
import {GgufReader} from "../gguf/GgufReader.js";
import {GgufValueType} from "../gguf/GgufValueType.js";

export interface ModelHeader {
    header: GgufReader;
    /** Length of tokenizer.ggml.tokens: llama.cpp's n_vocab, and the length of every logit row. */
    vocabularySize: number;
    /** `<architecture>.context_length`, when the GGUF states it. */
    trainedContextLength: number | undefined;
    /**
     * Bytes of llama.cpp's default (F16) KV cache per token of context: 2 (K and V) × layers × the
     * K/V width × 2 bytes; undefined when the GGUF lacks the sizes.
     */
    kvCacheBytesPerToken: number | undefined;
    /** general.architecture, e.g. "llama", or "eagle3" for an EAGLE-3 draft head. */
    architecture: string | undefined;
    /** `<architecture>.block_count`: the model's layers. */
    blockCount: number | undefined;
    /** `<architecture>.embedding_length`: the model's hidden size. */
    embeddingLength: number | undefined;
    /** An EAGLE-3 head's target: the layers whose inputs it reads and their width (`eagle3.target_*`). */
    eagle3: {targetLayers: number[]; targetHiddenSize: number | undefined} | undefined;
}

/**
 * Parses and bounds-checks a GGUF header in TypeScript before llama.cpp sees the file, so a missing
 * file, a non-GGUF file or a truncated / malformed GGUF is a ModelLoadError with a precise reason.
 */
export function readModelHeader(path: string): ModelHeader {
    const header = GgufReader.readHeader(path);
    const tokens = header.metadata.get("tokenizer.ggml.tokens");
    if (tokens === undefined || tokens.type !== GgufValueType.Array || typeof tokens.value !== "object" || tokens.value.items.length === 0)
        throw new ModelLoadError("corrupt", "the GGUF has no tokenizer.ggml.tokens vocabulary", path);
    const architecture = header.metadata.get("general.architecture")?.value;
    const contextLength = typeof architecture === "string" ? header.metadata.get(`${architecture}.context_length`)?.value : undefined;
    const number = (key: string): number | undefined => {
        const value = typeof architecture === "string" ? header.metadata.get(`${architecture}.${key}`)?.value : undefined;
        return typeof value === "number" || typeof value === "bigint" ? Number(value) : undefined;
    };
    const layers = number("block_count");
    const width = number("embedding_length");
    const heads = number("attention.head_count");
    const kvHeads = number("attention.head_count_kv") ?? heads;
    const keyLength = number("attention.key_length") ?? (width !== undefined && heads ? width / heads : undefined);
    const valueLength = number("attention.value_length") ?? keyLength;
    const kvCacheBytesPerToken =
        layers !== undefined && kvHeads !== undefined && keyLength !== undefined && valueLength !== undefined
            ? layers * kvHeads * (keyLength + valueLength) * 2
            : undefined;
    const targetLayers = header.metadata.get("eagle3.target_layers");
    const eagle3 =
        architecture === "eagle3"
            ? {
                  targetLayers:
                      targetLayers?.type === GgufValueType.Array && typeof targetLayers.value === "object"
                          ? targetLayers.value.items.map(Number)
                          : [],
                  targetHiddenSize: number("target_hidden_size")
              }
            : undefined;
    return {
        header,
        architecture: typeof architecture === "string" ? architecture : undefined,
        blockCount: layers,
        embeddingLength: width,
        eagle3,
        vocabularySize: tokens.value.items.length,
        trainedContextLength: contextLength === undefined ? undefined : Number(contextLength),
        kvCacheBytesPerToken
    };
}
