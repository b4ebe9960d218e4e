import {describe, expect, it} from "vitest";
import {InvalidDistributionError, InvalidInputError, TokenOutOfRangeError} from "../../errors.js";
import {Random} from "../../random/Random.js";
import {initializeLlamaWeights} from "./initializeLlamaWeights.js";
import type {LlamaConfig} from "./LlamaConfig.js";
import {type TrainingSequence, llamaLossAndGradients} from "./llamaLossAndGradients.js";
import {llamaTensorLayout} from "./llamaTensorLayout.js";
import {RopeTable} from "./RopeTable.js";

const tiny: LlamaConfig = {
    vocabularySize: 11,
    embeddingLength: 8,
    blockCount: 2,
    headCount: 4,
    headCountKv: 2,
    feedForwardLength: 12,
    contextLength: 16,
    rmsNormEpsilon: 1e-5,
    ropeFreqBase: 10000,
    tiedOutput: false
};

const batch: TrainingSequence[] = [{tokens: [1, 4, 7, 2, 9, 10]}, {tokens: [3, 3, 8, 0], lossWeights: [0, 2, 0.5]}];

/** A random full-support distribution over the tiny vocabulary (a teacher row). */
function randomRow(random: Random, size = tiny.vocabularySize): Float64Array {
    const row = Float64Array.from({length: size}, () => Math.exp(3 * random.nextDouble()));
    const total = row.reduce((sum, value) => sum + value, 0);
    return row.map((value) => value / total);
}

/** Soft targets on some positions, hard labels and zero weights on others: every branch of the loss. */
function softBatch(): TrainingSequence[] {
    const random = new Random(12);
    return [
        {tokens: [1, 4, 7, 2, 9, 10], targetDistributions: [undefined, randomRow(random), randomRow(random), undefined, randomRow(random)]},
        {tokens: [3, 3, 8, 0], lossWeights: [0, 2, 0.5], targetDistributions: [randomRow(random), randomRow(random), randomRow(random)]}
    ];
}

/**
 * ‖numeric − analytic‖ / (‖numeric‖ + ‖analytic‖) per tensor, the numeric gradient by central
 * differences. In float64 with h = 1e-5 the truncation error (h²·f''' ≈ 1e-10) and the rounding error
 * (ε·loss/h ≈ 1e-11) are both far below the 1e-6 bound, so a bound miss means a wrong formula.
 */
function gradientErrors(config: LlamaConfig, sequences: TrainingSequence[]): Map<string, {error: number; norm: number}> {
    const weights = initializeLlamaWeights(config, {seed: 4, standardDeviation: 0.5, gainJitter: 0.3});
    const rope = new RopeTable(config.contextLength, config.embeddingLength / config.headCount, config.ropeFreqBase);
    const {gradients} = llamaLossAndGradients(config, weights, rope, sequences);
    const step = 1e-5;
    const errors = new Map<string, {error: number; norm: number}>();
    for (const {name} of llamaTensorLayout(config)) {
        const values = weights.get(name)!;
        const analytic = gradients.get(name)!;
        let difference = 0;
        let numericNorm = 0;
        let analyticNorm = 0;
        for (let i = 0; i < values.length; i++) {
            const original = values[i];
            values[i] = original + step;
            const above = llamaLossAndGradients(config, weights, rope, sequences).loss;
            values[i] = original - step;
            const below = llamaLossAndGradients(config, weights, rope, sequences).loss;
            values[i] = original;
            const numeric = (above - below) / (2 * step);
            difference += (numeric - analytic[i]) ** 2;
            numericNorm += numeric ** 2;
            analyticNorm += analytic[i] ** 2;
        }
        errors.set(name, {
            error: Math.sqrt(difference) / (Math.sqrt(numericNorm) + Math.sqrt(analyticNorm)),
            norm: Math.sqrt(analyticNorm)
        });
    }
    return errors;
}

describe("llamaLossAndGradients", () => {
    it.each([
        {label: "untied output, grouped-query attention", config: tiny},
        {label: "tied output, multi-head attention", config: {...tiny, headCount: 2, headCountKv: 2, tiedOutput: true}}
    ])("matches finite differences for every tensor ($label)", ({config}) => {
        const errors = gradientErrors(config, batch);
        expect([...errors.keys()]).toEqual(llamaTensorLayout(config).map((shape) => shape.name));
        for (const [name, {error, norm}] of errors) {
            expect(norm, `${name} gets a gradient`).toBeGreaterThan(1e-4);
            expect(error, name).toBeLessThan(1e-6);
        }
    });

    it("matches finite differences for every tensor with soft target distributions", () => {
        for (const [name, {error, norm}] of gradientErrors(tiny, softBatch())) {
            expect(norm, `${name} gets a gradient`).toBeGreaterThan(1e-4);
            expect(error, name).toBeLessThan(1e-6);
        }
    });

    it("scores a soft row as −Σ p log q, and a one-hot row exactly as the hard label", () => {
        const weights = initializeLlamaWeights(tiny, {seed: 3, standardDeviation: 0.5});
        const rope = new RopeTable(16, 2, 10000);
        const tokens = [1, 4, 7, 2];
        const hard = llamaLossAndGradients(tiny, weights, rope, [{tokens}]);
        const oneHot = tokens
            .slice(1)
            .map((token) => Float64Array.from({length: tiny.vocabularySize}, (_value, index) => (index === token ? 1 : 0)));
        const asRows = llamaLossAndGradients(tiny, weights, rope, [{tokens, targetDistributions: oneHot}]);
        expect(asRows.loss).toBeCloseTo(hard.loss, 13);
        for (const [name, gradient] of hard.gradients)
            asRows.gradients.get(name)!.forEach((value, index) => expect(value).toBeCloseTo(gradient[index], 13));
        // The cross-entropy against a row p is the p-mixture of the hard-label losses of each token.
        const row = randomRow(new Random(5));
        const soft = llamaLossAndGradients(tiny, weights, rope, [{tokens: [1, 0], targetDistributions: [row]}]);
        const mixture = [...row].reduce(
            (sum, probability, token) => sum + probability * llamaLossAndGradients(tiny, weights, rope, [{tokens: [1, token]}]).loss,
            0
        );
        expect(soft.loss).toBeCloseTo(mixture, 12);
    });

    it("rejects malformed target distributions with typed errors naming the row", () => {
        const weights = initializeLlamaWeights(tiny, {seed: 1});
        const rope = new RopeTable(16, 2, 10000);
        const uniform = new Float64Array(tiny.vocabularySize).fill(1 / tiny.vocabularySize);
        const run = (targetDistributions: (Float64Array | undefined)[]) => () =>
            llamaLossAndGradients(tiny, weights, rope, [{tokens: [1, 2, 3], targetDistributions}]);
        expect(run([uniform])).toThrow(/expected 2 target distributions, got 1/);
        expect(run([uniform, new Float64Array(3).fill(1 / 3)])).toThrow(
            /batch\[0\]\.targetDistributions\[1\]: has 3 entries, expected the vocabulary size 11/
        );
        const negative = Float64Array.from(uniform);
        negative[2] = -0.1;
        expect(run([negative, undefined])).toThrow(InvalidDistributionError);
        expect(run([negative, undefined])).toThrow(/targetDistributions\[0\]\[2\]: is negative/);
        const unnormalized = uniform.map((value) => value * 2);
        expect(run([undefined, unnormalized])).toThrow(/targetDistributions\[1\]: sums to 2/);
        const notANumber = Float64Array.from(uniform);
        notANumber[0] = Number.NaN;
        expect(run([undefined, notANumber])).toThrow(/is not a number/);
        expect(run([undefined, undefined])()).toMatchObject({weightTotal: 2});
    });

    it("starts near ln(vocabulary) with small weights and weights positions by lossWeights", () => {
        const weights = initializeLlamaWeights(tiny, {seed: 1});
        const rope = new RopeTable(16, 2, 10000);
        const uniform = llamaLossAndGradients(tiny, weights, rope, [{tokens: [1, 2, 3, 4]}]);
        expect(uniform.weightTotal).toBe(3);
        expect(Math.abs(uniform.loss - Math.log(11))).toBeLessThan(0.05);
        // Weight only the last prediction: the loss equals that of a batch ending there.
        const last = llamaLossAndGradients(tiny, weights, rope, [{tokens: [1, 2, 3, 4], lossWeights: [0, 0, 1]}]);
        const alone = llamaLossAndGradients(tiny, weights, rope, [{tokens: [1, 2, 3, 4], lossWeights: [0, 0, 5]}]);
        expect(last.loss).toBeCloseTo(alone.loss, 14);
        expect(last.loss).not.toBeCloseTo(uniform.loss, 6);
    });

    it("rejects malformed batches with typed errors", () => {
        const weights = initializeLlamaWeights(tiny, {seed: 1});
        const rope = new RopeTable(16, 2, 10000);
        expect(() => llamaLossAndGradients(tiny, weights, rope, [{tokens: [1]}])).toThrow(InvalidInputError);
        expect(() => llamaLossAndGradients(tiny, weights, rope, [{tokens: [1, 2], lossWeights: [1, 1]}])).toThrow(
            /expected 1 loss weights/
        );
        expect(() => llamaLossAndGradients(tiny, weights, rope, [{tokens: [1, 2], lossWeights: [0]}])).toThrow(/no positive loss weight/);
        expect(() => llamaLossAndGradients(tiny, weights, rope, [{tokens: [1, 11]}])).toThrow(TokenOutOfRangeError);
        expect(() => llamaLossAndGradients(tiny, weights, rope, [{tokens: [-1, 1]}])).toThrow(/outside \[0, 11\)/);
    });
});
