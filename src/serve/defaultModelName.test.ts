import {copyFile, mkdir, mkdtemp, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {defaultModelName} from "./defaultModelName.js";

const shippedTarget = new URL("../../models/target/model.gguf", import.meta.url).pathname;
let directory: string;

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-model-name-"));
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

describe("defaultModelName", () => {
    it("is the GGUF's general.name", () => {
        expect(defaultModelName(shippedTarget)).toBe("specgate-target");
    });

    it("without a readable general.name: the folder of a model.gguf, else the file name", async () => {
        await mkdir(join(directory, "qwen-small"));
        await writeFile(join(directory, "qwen-small", "model.gguf"), "not a gguf");
        await writeFile(join(directory, "tiny-q8.gguf"), "not a gguf");
        expect(defaultModelName(join(directory, "qwen-small", "model.gguf"))).toBe("qwen-small");
        expect(defaultModelName(join(directory, "tiny-q8.gguf"))).toBe("tiny-q8");
        await copyFile(shippedTarget, join(directory, "renamed.gguf"));
        expect(defaultModelName(join(directory, "renamed.gguf"))).toBe("specgate-target");
    });
});
