import {ByteTokenizer} from "../../gguf/ByteTokenizer.js";

/**
 * The training token stream: every document as BOS, its tokens, EOS, concatenated. Windows cut
 * from it teach the model to start after BOS (as every prompt does at inference) and to end a
 * document with EOS, so generation stops by itself.
 */
export function tokenStreamOf(documents: readonly string[], tokenizer: ByteTokenizer): Int32Array {
    const parts = documents.map((document) => [ByteTokenizer.bosId, ...tokenizer.tokenize(document), ByteTokenizer.eosId]);
    const stream = new Int32Array(parts.reduce((sum, part) => sum + part.length, 0));
    let offset = 0;
    for (const part of parts) {
        stream.set(part, offset);
        offset += part.length;
    }
    return stream;
}
