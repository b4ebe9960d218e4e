import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../../errors.js";
import type {LlamaConfig} from "../model/LlamaConfig.js";
import {initializeLlamaWeights} from "../model/initializeLlamaWeights.js";
import {llamaForward} from "../model/llamaForward.js";
import {RopeTable} from "../model/RopeTable.js";
import {targetFeatures} from "./targetFeatures.js";

const config: LlamaConfig = {
    vocabularySize: 13,
    embeddingLength: 8,
    blockCount: 4,
    headCount: 2,
    headCountKv: 2,
    feedForwardLength: 12,
    contextLength: 16,
    rmsNormEpsilon: 1e-5,
    ropeFreqBase: 10000,
    tiedOutput: false
};

describe("targetFeatures", () => {
    it("returns the inputs of the named layers of the full forward pass, side by side", () => {
        const weights = initializeLlamaWeights(config, {seed: 2, standardDeviation: 0.3});
        const rope = new RopeTable(config.contextLength, 4, config.ropeFreqBase);
        const tokens = [1, 5, 9, 2, 12];
        const features = targetFeatures(config, weights, rope, tokens, [0, 1, 3]);
        const {activations} = llamaForward(config, weights, rope, tokens);
        for (let row = 0; row < tokens.length; row++)
            [0, 1, 3].forEach((layer, slot) => {
                const expected = activations.blocks[layer].input.subarray(row * 8, row * 8 + 8);
                expect(features.subarray(row * 24 + slot * 8, row * 24 + slot * 8 + 8)).toEqual(expected);
            });
        expect(() => targetFeatures(config, weights, rope, tokens, [1, 2, 4])).toThrow(InvalidInputError);
    });

    it("equals the forward pass to the last bit with an odd feed-forward width and length (the blocked product's edges)", () => {
        const odd: LlamaConfig = {...config, embeddingLength: 6, feedForwardLength: 11, headCount: 3, headCountKv: 1};
        const weights = initializeLlamaWeights(odd, {seed: 3, standardDeviation: 0.3});
        const rope = new RopeTable(odd.contextLength, 2, odd.ropeFreqBase);
        const tokens = [1, 4, 7, 2, 11, 3, 8];
        const features = targetFeatures(odd, weights, rope, tokens, [2, 3]);
        const {activations} = llamaForward(odd, weights, rope, tokens);
        for (let row = 0; row < tokens.length; row++)
            [2, 3].forEach((layer, slot) => {
                const expected = activations.blocks[layer].input.subarray(row * 6, row * 6 + 6);
                expect(features.subarray(row * 12 + slot * 6, row * 12 + slot * 6 + 6)).toEqual(expected);
            });
    });
});
