import type {ModelBackend} from "./ModelBackend.js";

/**
 * Whether a prompt for `backend` starts with its BOS token, as llama.cpp's tokenizer adds it: when the
 * model has one and its GGUF does not set `tokenizer.ggml.add_bos_token` to false (Qwen's does:
 * a Qwen prompt starts with its first text token).
 */
export function addsBos(backend: ModelBackend): boolean {
    return backend.bosToken != null && backend.vocabularyDescription?.().addBos !== false;
}

/** `tokens` as a generation of `backend` decodes them: with its BOS token first where addsBos says so. */
export function withBos(backend: ModelBackend, tokens: readonly number[]): number[] {
    return addsBos(backend) && tokens[0] !== backend.bosToken ? [backend.bosToken!, ...tokens] : [...tokens];
}
