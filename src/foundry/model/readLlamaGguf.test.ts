import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {ModelLoadError} from "../../errors.js";
import {ByteTokenizer} from "../../gguf/ByteTokenizer.js";
import {GgmlTensorType} from "../../gguf/GgmlTensorType.js";
import {exportLlamaGguf} from "../exportLlamaGguf.js";
import {initializeLlamaWeights} from "./initializeLlamaWeights.js";
import type {LlamaConfig} from "./LlamaConfig.js";
import {readLlamaGguf} from "./readLlamaGguf.js";
import {writeLlamaGguf} from "./writeLlamaGguf.js";

const tokenizer = new ByteTokenizer();
const config: LlamaConfig = {
    vocabularySize: tokenizer.size,
    embeddingLength: 32,
    blockCount: 2,
    headCount: 4,
    headCountKv: 2,
    feedForwardLength: 64,
    contextLength: 64,
    rmsNormEpsilon: 1e-5,
    ropeFreqBase: 10000,
    tiedOutput: false
};
let directory: string;
beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-read-gguf-"));
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

describe("readLlamaGguf", () => {
    it("reads back exactly the config and F32 weights writeLlamaGguf wrote, tied or not", async () => {
        for (const tiedOutput of [false, true]) {
            const shape = {...config, tiedOutput};
            const weights = initializeLlamaWeights(shape, {seed: 9, gainJitter: 0.1});
            const path = join(directory, `model-${tiedOutput}.gguf`);
            await writeLlamaGguf(path, shape, weights, tokenizer);
            const read = readLlamaGguf(path);
            // The file stores the epsilon as float32.
            expect(read.config).toEqual({...shape, rmsNormEpsilon: Math.fround(shape.rmsNormEpsilon)});
            for (const [name, values] of weights) expect(read.weights.get(name), name).toEqual(values);
        }
    });

    it("exports Q8_0 within its quantisation step and refuses rows that are not blocks of 32", async () => {
        const weights = initializeLlamaWeights(config, {seed: 2});
        const path = join(directory, "f32.gguf");
        await writeLlamaGguf(path, config, weights, tokenizer);
        await exportLlamaGguf(path, join(directory, "q8.gguf"), "q8_0");
        const quantized = readLlamaGguf(join(directory, "q8.gguf"));
        const original = weights.get("blk.0.ffn_up.weight")!;
        const restored = quantized.weights.get("blk.0.ffn_up.weight")!;
        const largest = original.reduce((maximum, value) => Math.max(maximum, Math.abs(value)), 0);
        restored.forEach((value, index) => expect(Math.abs(value - original[index])).toBeLessThanOrEqual(largest / 127));
        expect(restored).not.toEqual(original);

        const odd = {...config, embeddingLength: 48, headCount: 4, headCountKv: 4};
        await writeLlamaGguf(join(directory, "odd.gguf"), odd, initializeLlamaWeights(odd, {seed: 1}), tokenizer, {
            weightType: GgmlTensorType.F32
        });
        await expect(exportLlamaGguf(join(directory, "odd.gguf"), join(directory, "odd-q8.gguf"), "q8_0")).rejects.toThrow(
            /multiple of 32/
        );
    });

    it("exports only the blocks asked for, renumbered, with the embeddings and head", async () => {
        const weights = initializeLlamaWeights(config, {seed: 3});
        const path = join(directory, "two-blocks.gguf");
        await writeLlamaGguf(path, config, weights, tokenizer);
        await exportLlamaGguf(path, join(directory, "block-1.gguf"), "f32", undefined, [1]);
        const kept = readLlamaGguf(join(directory, "block-1.gguf"));
        expect(kept.config.blockCount).toBe(1);
        for (const name of ["blk.0.attn_q.weight", "blk.0.ffn_down.weight", "token_embd.weight", "output.weight"])
            expect(kept.weights.get(name), name).toEqual(Float64Array.from(weights.get(name.replace("blk.0.", "blk.1."))!, Math.fround));
        await expect(exportLlamaGguf(path, join(directory, "block-2.gguf"), "f32", undefined, [2])).rejects.toThrow(
            /block 2 is not one of the model's 2 blocks/
        );
    });

    it("refuses a file that is not a llama GGUF", async () => {
        expect(() => readLlamaGguf(join(directory, "missing.gguf"))).toThrow(ModelLoadError);
    });
});
