import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../../errors.js";
import {ByteTokenizer} from "../../gguf/ByteTokenizer.js";
import {initializeLlamaWeights} from "./initializeLlamaWeights.js";
import {keepLlamaLayers} from "./keepLlamaLayers.js";
import {headDimension, type LlamaConfig} from "./LlamaConfig.js";
import {llamaForward} from "./llamaForward.js";
import type {LlamaWeights} from "./LlamaWeights.js";
import {RopeTable} from "./RopeTable.js";

const config: LlamaConfig = {
    vocabularySize: new ByteTokenizer().size,
    embeddingLength: 32,
    blockCount: 3,
    headCount: 4,
    headCountKv: 2,
    feedForwardLength: 48,
    contextLength: 16,
    rmsNormEpsilon: 1e-5,
    ropeFreqBase: 10000,
    tiedOutput: false
};
const weights = initializeLlamaWeights(config, {seed: 5, gainJitter: 0.1});
const tokens = [72, 101, 108, 108, 111, 32, 51, 43, 52];
const logitsOf = (shape: LlamaConfig, values: LlamaWeights): Float64Array =>
    llamaForward(shape, values, new RopeTable(shape.contextLength, headDimension(shape), shape.ropeFreqBase), tokens).logits;

describe("keepLlamaLayers", () => {
    it("computes what the full model computes with the dropped blocks made identities", () => {
        // A block whose attention output and down projection are zero adds nothing to the residual
        // stream, so the full model with block 1 silenced is the two-block model [0, 2].
        const silenced = new Map(weights);
        silenced.set("blk.1.attn_output.weight", new Float64Array(config.embeddingLength * config.embeddingLength));
        silenced.set("blk.1.ffn_down.weight", new Float64Array(config.embeddingLength * config.feedForwardLength));
        const kept = keepLlamaLayers(config, weights, [0, 2]);
        expect(kept.config.blockCount).toBe(2);
        const expected = logitsOf(config, silenced);
        const actual = logitsOf(kept.config, kept.weights);
        for (let index = 0; index < expected.length; index++) expect(actual[index]).toBeCloseTo(expected[index], 12);
        // and it is not the unsilenced model
        expect(Math.max(...logitsOf(config, weights).map((value, index) => Math.abs(value - actual[index])))).toBeGreaterThan(1e-3);
    });

    it("keeps every block in order as the same model, and copies rather than shares the arrays", () => {
        const kept = keepLlamaLayers(config, weights, [0, 1, 2]);
        expect(kept.weights).toEqual(weights);
        expect(kept.weights.get("blk.0.attn_q.weight")).not.toBe(weights.get("blk.0.attn_q.weight"));
    });

    it("renumbers blocks in the order given", () => {
        const kept = keepLlamaLayers(config, weights, [2, 0]);
        expect(kept.weights.get("blk.0.ffn_up.weight")).toEqual(weights.get("blk.2.ffn_up.weight"));
        expect(kept.weights.get("blk.1.ffn_up.weight")).toEqual(weights.get("blk.0.ffn_up.weight"));
        expect(kept.weights.has("blk.2.ffn_up.weight")).toBe(false);
    });

    it("names a block that does not exist, a repeated block and an empty list", () => {
        expect(() => keepLlamaLayers(config, weights, [0, 3])).toThrow(/block 3 is not one of the model's 3 blocks/);
        expect(() => keepLlamaLayers(config, weights, [1, 1])).toThrow(/listed twice/);
        expect(() => keepLlamaLayers(config, weights, [])).toThrow(InvalidInputError);
    });
});
