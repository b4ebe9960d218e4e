import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../../errors.js";
import {Random} from "../../random/Random.js";
import {RopeTable} from "../model/RopeTable.js";
import {type Eagle3Config, eagle3FeatureWidth, eagle3HeadDimension} from "./Eagle3Config.js";
import type {Eagle3Example} from "./Eagle3Example.js";
import {eagle3Forward} from "./eagle3Forward.js";
import {eagle3LossAndGradients} from "./eagle3LossAndGradients.js";
import {eagle3TensorLayout} from "./eagle3TensorLayout.js";
import {initializeEagle3Weights} from "./initializeEagle3Weights.js";

const tiny: Eagle3Config = {
    targetLayers: [1, 2, 3],
    targetHiddenSize: 6,
    vocabularySize: 11,
    embeddingLength: 8,
    headCount: 4,
    headCountKv: 2,
    feedForwardLength: 12,
    contextLength: 16,
    rmsNormEpsilon: 1e-5,
    ropeFreqBase: 10000
};

function example(random: Random, tokens: number[]): Eagle3Example {
    const features = Float64Array.from({length: tokens.length * eagle3FeatureWidth(tiny)}, () => 2 * random.nextDouble() - 1);
    return {tokens, features};
}

const random = new Random(5);
const batch: Eagle3Example[] = [{...example(random, [1, 4, 7, 2, 9, 10, 3, 6]), chainStart: 2}, example(random, [3, 3, 8, 0, 5])];
const rope = new RopeTable(tiny.contextLength, eagle3HeadDimension(tiny), tiny.ropeFreqBase);

describe("eagle3LossAndGradients", () => {
    it("matches central differences on every tensor with three unrolled steps", () => {
        const weights = initializeEagle3Weights(tiny, {seed: 4, standardDeviation: 0.5, gainJitter: 0.3});
        const options = {unrolledSteps: 3, stepDecay: 0.7};
        const {gradients, steps} = eagle3LossAndGradients(tiny, weights, rope, batch, options);
        // The first sequence's chains start at root 2: 6 roots at step 0, then 3 and 2.
        expect(steps.map((step) => step.rows)).toEqual([6 + 3, 3 + 2, 2 + 1]);
        const h = 1e-5;
        for (const {name} of eagle3TensorLayout(tiny)) {
            const values = weights.get(name)!;
            const analytic = gradients.get(name)!;
            let difference = 0;
            let norm = 0;
            for (let i = 0; i < values.length; i++) {
                const original = values[i];
                values[i] = original + h;
                const plus = eagle3LossAndGradients(tiny, weights, rope, batch, options).loss;
                values[i] = original - h;
                const minus = eagle3LossAndGradients(tiny, weights, rope, batch, options).loss;
                values[i] = original;
                const numeric = (plus - minus) / (2 * h);
                difference += (numeric - analytic[i]) ** 2;
                norm += numeric ** 2 + analytic[i] ** 2;
            }
            expect(norm, name).toBeGreaterThan(0);
            expect(Math.sqrt(difference) / Math.sqrt(norm), name).toBeLessThan(1e-6);
        }
    });

    it("feeds step k the previous step's pre-norm output at position P + k", () => {
        const weights = initializeEagle3Weights(tiny, {seed: 2, standardDeviation: 0.3});
        const forward = eagle3Forward(tiny, weights, rope, {...batch[0], chainStart: 0}, 3);
        expect(forward.logits.map((rows) => rows.length / tiny.vocabularySize)).toEqual([6, 5, 4]);
        expect(forward.steps[1].g).toEqual(forward.steps[0].prenorm.subarray(0, 5 * tiny.embeddingLength));
        expect(forward.steps[2].inputTokens).toEqual([2, 9, 10, 3]);
        // A chain started later computes the same rows for its roots.
        const later = eagle3Forward(tiny, weights, rope, batch[0], 3);
        expect(later.steps[2].firstRoot).toBe(2);
        later.logits[2].forEach((value, i) => expect(value).toBeCloseTo(forward.logits[2][2 * tiny.vocabularySize + i], 12));
        // Step 0 is causal: root 0's output does not depend on the tokens after its pair.
        const changed = eagle3Forward(tiny, weights, rope, {...batch[0], tokens: [1, 4, 7, 7, 7, 7, 7, 7]}, 1);
        expect(changed.logits[0].subarray(0, tiny.vocabularySize)).toEqual(forward.logits[0].subarray(0, tiny.vocabularySize));
    });

    it("rejects sequences too short to predict and bad step counts", () => {
        const weights = initializeEagle3Weights(tiny, {seed: 2});
        expect(() => eagle3LossAndGradients(tiny, weights, rope, [example(random, [1, 2])], {unrolledSteps: 1})).toThrow(InvalidInputError);
        expect(() => eagle3LossAndGradients(tiny, weights, rope, batch, {unrolledSteps: 0})).toThrow(InvalidInputError);
    });
});
