import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../../errors.js";
import type {LlamaConfig} from "../model/LlamaConfig.js";
import {initializeLlamaWeights} from "../model/initializeLlamaWeights.js";
import {llamaForward} from "../model/llamaForward.js";
import {RopeTable} from "../model/RopeTable.js";
import {eagle3Forward} from "./eagle3Forward.js";
import {familyEagle3Config} from "./familyEagle3Config.js";
import {initializeEagle3FromTarget} from "./initializeEagle3FromTarget.js";
import {targetFeatures} from "./targetFeatures.js";

const target: LlamaConfig = {
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

describe("initializeEagle3FromTarget", () => {
    it("starts as the target's last block: step 0 computes the target's final residual and logits", () => {
        const targetWeights = initializeLlamaWeights(target, {seed: 3, standardDeviation: 0.3, gainJitter: 0.2});
        const config = familyEagle3Config(target);
        const weights = initializeEagle3FromTarget(config, target, targetWeights, 1);
        const rope = new RopeTable(target.contextLength, 4, target.ropeFreqBase);
        const tokens = [1, 5, 9, 2, 12, 7];
        const full = llamaForward(target, targetWeights, rope, tokens);
        const features = targetFeatures(target, targetWeights, rope, tokens, config.targetLayers);
        const head = eagle3Forward(config, weights, rope, {tokens, features}, 1);
        // Roots 0..3: position P's pre-norm output is the target's residual after its last block.
        head.steps[0].prenorm.forEach((value, i) => expect(value).toBeCloseTo(full.activations.finalInput[i], 10));
        head.logits[0].forEach((value, i) => expect(value).toBeCloseTo(full.logits[i], 10));
    });

    it("needs the target's shape", () => {
        const targetWeights = initializeLlamaWeights(target, {seed: 3});
        const config = familyEagle3Config(target, {feedForwardLength: 6});
        expect(() => initializeEagle3FromTarget(config, target, targetWeights, 1)).toThrow(InvalidInputError);
    });
});
