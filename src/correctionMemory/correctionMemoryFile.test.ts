import {mkdtemp, readFile, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../errors.js";
import {CorrectionMemory} from "../policies/CorrectionMemory.js";
import {loadCorrectionMemory, saveCorrectionMemory} from "./correctionMemoryFile.js";

describe("correction memory files", () => {
    it("round-trips through its JSON file and keeps a stable entry order", async () => {
        const directory = await mkdtemp(join(tmpdir(), "specgate-memory-"));
        const memory = new CorrectionMemory(100, "vocab-abc");
        memory.record(5, 7, 3);
        memory.record(1, 2, 9);
        memory.record(5, 7);
        const path = join(directory, "memory.json");
        await saveCorrectionMemory(memory, path);
        const loaded = await loadCorrectionMemory(path, "vocab-abc");
        expect(loaded.entries()).toEqual([
            [1, 2, 9],
            [5, 7, 4]
        ]);
        expect(JSON.parse(await readFile(path, "utf8")).format).toBe("specgate.correction-memory");
    });

    it("refuses a memory built for another vocabulary, and malformed files, naming the field", async () => {
        const directory = await mkdtemp(join(tmpdir(), "specgate-memory-"));
        const path = join(directory, "memory.json");
        await saveCorrectionMemory(new CorrectionMemory(10, "vocab-a"), path);
        await expect(loadCorrectionMemory(path, "vocab-b")).rejects.toThrow(/vocabularyIdentity/);
        await writeFile(
            path,
            JSON.stringify({format: "specgate.correction-memory", version: 1, vocabularySize: 10, entries: [[1, 12, 3]]})
        );
        await expect(loadCorrectionMemory(path)).rejects.toThrow(/entries\.0/);
        await writeFile(path, JSON.stringify({format: "specgate.correction-memory", version: 1, vocabularySize: 10, entries: [[1, 2, 0]]}));
        await expect(loadCorrectionMemory(path)).rejects.toThrow(InvalidInputError);
        await writeFile(path, "{not json");
        await expect(loadCorrectionMemory(path)).rejects.toThrow(/not JSON/);
    });
});
