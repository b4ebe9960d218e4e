import {mkdtemp} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {describe, expect, it} from "vitest";
import {CorrectionMemory} from "../policies/CorrectionMemory.js";
import {parsePolicySpec} from "../policies/parsePolicySpec.js";
import {saveCorrectionMemory} from "./correctionMemoryFile.js";
import {resolveCorrectionMemory} from "./resolveCorrectionMemory.js";

describe("resolveCorrectionMemory", () => {
    it("loads a calibrated policy's memory file relative to the base directory", async () => {
        const directory = await mkdtemp(join(tmpdir(), "specgate-resolve-"));
        const memory = new CorrectionMemory(10, "vocab");
        memory.record(3, 4, 7);
        await saveCorrectionMemory(memory, join(directory, "memory.json"));
        const policy = parsePolicySpec('{"kind":"calibrated","memory":"memory.json"}');
        const loaded = await resolveCorrectionMemory(policy, {size: 10, identity: "vocab"}, directory);
        expect(loaded!.count(3, 4)).toBe(7);
        await expect(resolveCorrectionMemory(policy, {size: 10, identity: "other"}, directory)).rejects.toThrow(/vocabularyIdentity/);
        await expect(resolveCorrectionMemory(policy, {size: 12, identity: "vocab"}, directory)).rejects.toThrow(/vocabulary of 10/);
    });

    it("starts an empty memory without a file and gives none to other policies", async () => {
        expect((await resolveCorrectionMemory(parsePolicySpec("calibrated"), {size: 5}))!.size).toBe(0);
        expect(await resolveCorrectionMemory(parsePolicySpec("strict"), {size: 5})).toBeUndefined();
    });
});
