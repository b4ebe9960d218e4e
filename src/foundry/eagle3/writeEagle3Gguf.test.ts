import {mkdtempSync, rmSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, describe, expect, it} from "vitest";
import {InvalidInputError, ModelLoadError} from "../../errors.js";
import {ByteTokenizer} from "../../gguf/ByteTokenizer.js";
import {GgufReader} from "../../gguf/GgufReader.js";
import type {LlamaConfig} from "../model/LlamaConfig.js";
import {writeLlamaGguf} from "../model/writeLlamaGguf.js";
import {initializeLlamaWeights} from "../model/initializeLlamaWeights.js";
import {familyEagle3Config} from "./familyEagle3Config.js";
import {eagle3TensorLayout} from "./eagle3TensorLayout.js";
import {initializeEagle3Weights} from "./initializeEagle3Weights.js";
import {readEagle3Gguf} from "./readEagle3Gguf.js";
import {writeEagle3Gguf} from "./writeEagle3Gguf.js";

const target: LlamaConfig = {
    vocabularySize: new ByteTokenizer().size,
    embeddingLength: 16,
    blockCount: 4,
    headCount: 2,
    headCountKv: 2,
    feedForwardLength: 24,
    contextLength: 64,
    rmsNormEpsilon: 1e-5,
    ropeFreqBase: 10000,
    tiedOutput: false
};

const directory = mkdtempSync(join(tmpdir(), "eagle3-gguf-"));
afterAll(() => rmSync(directory, {recursive: true, force: true}));

describe("writeEagle3Gguf", () => {
    it("writes the eagle3 metadata and tensors llama.cpp's loader reads, and reads back bit for bit", async () => {
        const config = familyEagle3Config(target);
        expect(config.targetLayers).toEqual([1, 2, 3]);
        const weights = initializeEagle3Weights(config, {seed: 3, gainJitter: 0.1});
        const path = join(directory, "head.gguf");
        await writeEagle3Gguf(path, config, weights, new ByteTokenizer());

        const reader = GgufReader.open(path);
        try {
            const value = (key: string): unknown => reader.metadata.get(key)?.value;
            expect(value("general.architecture")).toBe("eagle3");
            expect(value("eagle3.block_count")).toBe(1);
            expect(value("eagle3.embedding_length")).toBe(16);
            expect(value("eagle3.target_hidden_size")).toBe(16);
            expect(value("eagle3.target_layers")).toEqual({itemType: expect.any(Number), items: [1, 2, 3]});
            expect(value("eagle3.norm_before_residual")).toBe(false);
            expect(reader.metadata.has("llama.block_count")).toBe(false);
            const fc = reader.tensors.find((tensor) => tensor.name === "fc.weight");
            expect(fc?.dimensions.map(Number)).toEqual([48, 16]);
            const q = reader.tensors.find((tensor) => tensor.name === "blk.0.attn_q.weight");
            expect(q?.dimensions.map(Number)).toEqual([32, 16]);
            expect(reader.tensors.map((tensor) => tensor.name)).toEqual(eagle3TensorLayout(config).map((shape) => shape.name));
        } finally {
            reader.close();
        }

        const back = readEagle3Gguf(path);
        expect(back.config).toEqual({...config, rmsNormEpsilon: Math.fround(config.rmsNormEpsilon)});
        for (const [name, values] of weights) expect(back.weights.get(name)).toEqual(values);
    });

    it("initialises deterministically in the seed", () => {
        const config = familyEagle3Config(target);
        const first = initializeEagle3Weights(config, {seed: 9});
        const again = initializeEagle3Weights(config, {seed: 9});
        const other = initializeEagle3Weights(config, {seed: 10});
        expect(again.get("fc.weight")).toEqual(first.get("fc.weight"));
        expect(other.get("fc.weight")).not.toEqual(first.get("fc.weight"));
        expect(first.get("blk.0.attn_norm_2.weight")!.every((gain) => gain === 1)).toBe(true);
    });

    it("refuses layer ids the target cannot expose and files that are not heads", async () => {
        expect(() => familyEagle3Config(target, {targetLayers: [1, 2, 4]})).toThrow(InvalidInputError);
        const path = join(directory, "llama.gguf");
        await writeLlamaGguf(path, target, initializeLlamaWeights(target, {seed: 1}), new ByteTokenizer());
        expect(() => readEagle3Gguf(path)).toThrow(ModelLoadError);
    });
});
