import {readFile} from "node:fs/promises";
import {InvalidInputError} from "../errors.js";
import {writeFileAtomic} from "../io/writeFileAtomic.js";
import {CorrectionMemory} from "../policies/CorrectionMemory.js";

/**
 * Reads a correction memory file (`specgate.correction-memory`, written by `ocm build` and
 * `calibrate`), refusing one built for another vocabulary than `expectedVocabularyIdentity`.
 * Malformed files are InvalidInputErrors naming the path and field.
 */
export async function loadCorrectionMemory(path: string, expectedVocabularyIdentity?: string): Promise<CorrectionMemory> {
    let text: string;
    try {
        text = await readFile(path, "utf8");
    } catch (error) {
        throw new InvalidInputError(`cannot read correction memory: ${(error as Error).message}`, path);
    }
    let json: unknown;
    try {
        json = JSON.parse(text);
    } catch (error) {
        throw new InvalidInputError(`not JSON: ${(error as Error).message}`, path);
    }
    const memory = CorrectionMemory.fromJSON(json, path);
    if (expectedVocabularyIdentity != null && memory.vocabularyIdentity !== expectedVocabularyIdentity)
        throw new InvalidInputError(
            `built for vocabulary ${memory.vocabularyIdentity ?? "(unrecorded)"}, not ${expectedVocabularyIdentity}`,
            `${path}.vocabularyIdentity`
        );
    return memory;
}

/** Writes the memory as JSON, atomically (a reader never sees half a file). */
export async function saveCorrectionMemory(memory: CorrectionMemory, path: string): Promise<void> {
    await writeFileAtomic(path, JSON.stringify(memory.toJSON()) + "\n");
}
