import {mkdtemp, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {describe, expect, it} from "vitest";
import {cacheRamCeilingBytes, defaultCacheRamBytes, fullContextStateBytes} from "./defaultCacheRam.js";

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

describe("--cache-ram's default", () => {
    it("is the least of 8 GiB, an eighth of the machine's memory and 64 full-context KV states", () => {
        // The family target: 2 KiB of KV per token × 256 tokens = 512 KiB a state → 32 MiB.
        expect(defaultCacheRamBytes(512 * 1024, 16 * GiB)).toBe(32 * MiB);
        // A 7B-class model at 4k context (2 GiB a state) on a 32 GiB machine: an eighth of the memory.
        expect(defaultCacheRamBytes(2 * GiB, 32 * GiB)).toBe(4 * GiB);
        // On a large machine, llama-server's 8 GiB.
        expect(defaultCacheRamBytes(2 * GiB, 512 * GiB)).toBe(cacheRamCeilingBytes);
        // No state size known: the machine and the ceiling bound it.
        expect(defaultCacheRamBytes(undefined, 16 * GiB)).toBe(2 * GiB);
        expect(defaultCacheRamBytes(undefined, 512 * GiB)).toBe(cacheRamCeilingBytes);
    });

    it("reads the state size from the target GGUF, and leaves it out for a file that is no GGUF", async () => {
        const target = new URL("../../models/target/model.gguf", import.meta.url).pathname;
        expect(fullContextStateBytes(target, 256)).toBe(2048 * 256);
        // With an EAGLE-3 head, each token's three layer rows of 128 floats and its id are saved too.
        expect(fullContextStateBytes(target, 256, true)).toBe((2048 + 3 * 128 * 4 + 4) * 256);
        const directory = await mkdtemp(join(tmpdir(), "specgate-cache-ram-"));
        try {
            const notGguf = join(directory, "model.gguf");
            await writeFile(notGguf, "not a model");
            expect(fullContextStateBytes(notGguf, 256)).toBeUndefined();
            expect(fullContextStateBytes(join(directory, "missing.gguf"), 256)).toBeUndefined();
        } finally {
            await rm(directory, {recursive: true, force: true});
        }
    });
});
