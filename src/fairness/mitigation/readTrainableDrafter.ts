import {ModelLoadError, TokenizerMismatchError} from "../../errors.js";
import {type LlamaGgufContents, readLlamaGguf} from "../../foundry/model/readLlamaGguf.js";

/**
 * The drafter as the float64 reference model sees it, or a typed error saying why it cannot be
 * fine-tuned here: not a llama GGUF, a storage type the reader cannot decode (F32, F16 and Q8_0 read
 * fine; the output is always F32), or a vocabulary other than the target's — the target rows would
 * not line up with the drafter's logits.
 */
export function readTrainableDrafter(path: string, targetVocabularySize: number): LlamaGgufContents {
    let contents: LlamaGgufContents;
    try {
        contents = readLlamaGguf(path);
    } catch (error) {
        if (error instanceof ModelLoadError)
            throw new ModelLoadError(
                error.reason,
                `${path} cannot be fine-tuned by the reference llama model: ${error.message}`,
                "drafterPath"
            );
        throw error;
    }
    if (contents.config.vocabularySize !== targetVocabularySize)
        throw new TokenizerMismatchError(
            `the drafter has ${contents.config.vocabularySize} tokens, the target ${targetVocabularySize}`,
            "drafterPath"
        );
    return contents;
}
