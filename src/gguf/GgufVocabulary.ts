import type {GgufKeyValue} from "./llamaGgufMetadata.js";

/** A tokenizer as a GGUF stores it: its `tokenizer.*` metadata and the number of token rows. */
export interface GgufVocabulary {
    /** Length of `tokenizer.ggml.tokens` before padding: the model's embedding and output rows. */
    readonly size: number;
    /** A Jinja chat template to store as `tokenizer.chat_template`, when the tokenizer ships one. */
    readonly chatTemplate?: string;
    /** The `tokenizer.ggml.*` entries, with `paddingTokens` unused `[PAD<id>]` tokens appended. */
    metadata(paddingTokens: number): GgufKeyValue[];
}
