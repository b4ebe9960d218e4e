import type {GgufMetadataEntry} from "../gguf/GgufMetadataValue.js";

/**
 * What llama.cpp compares when it pairs a draft with a target (common_speculative_are_compatible):
 * the tokenizer model, every token's text, and the BOS/EOS ids with whether they are added.
 */
export interface VocabularyDescription {
    /** `tokenizer.ggml.model`: "llama" (SentencePiece), "gpt2" (byte-level BPE), …; undefined when absent. */
    readonly model: string | undefined;
    /** `tokenizer.ggml.tokens`, id by id. */
    readonly tokens: readonly string[];
    readonly bosToken: number | undefined;
    readonly eosToken: number | undefined;
    /** `tokenizer.ggml.add_bos_token` / `add_eos_token`; undefined when the file leaves them to llama.cpp's default. */
    readonly addBos: boolean | undefined;
    readonly addEos: boolean | undefined;
}

/** Reads a VocabularyDescription from a GGUF's metadata. */
export function describeVocabulary(metadata: ReadonlyMap<string, GgufMetadataEntry>): VocabularyDescription {
    const value = (key: string) => metadata.get(`tokenizer.ggml.${key}`)?.value;
    const tokens = value("tokens");
    const model = value("model");
    const id = (key: string) => {
        const entry = value(key);
        return typeof entry === "number" || typeof entry === "bigint" ? Number(entry) : undefined;
    };
    const flag = (key: string) => {
        const entry = value(key);
        return typeof entry === "boolean" ? entry : undefined;
    };
    return {
        model: typeof model === "string" ? model : undefined,
        tokens: typeof tokens === "object" ? tokens.items.map(String) : [],
        bosToken: id("bos_token_id"),
        eosToken: id("eos_token_id"),
        addBos: flag("add_bos_token"),
        addEos: flag("add_eos_token")
    };
}
