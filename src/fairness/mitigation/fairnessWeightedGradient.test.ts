import {describe, expect, it} from "vitest";
import {initializeLlamaWeights} from "../../foundry/model/initializeLlamaWeights.js";
import type {LlamaConfig} from "../../foundry/model/LlamaConfig.js";
import {llamaLossAndGradients, type TrainingSequence} from "../../foundry/model/llamaLossAndGradients.js";
import {llamaTensorLayout} from "../../foundry/model/llamaTensorLayout.js";
import {RopeTable} from "../../foundry/model/RopeTable.js";
import {Random} from "../../random/Random.js";
import {fairnessWeightedGradient} from "./fairnessWeightedGradient.js";
import {groupDivergences} from "./groupDivergences.js";

const tiny: LlamaConfig = {
    vocabularySize: 9,
    embeddingLength: 8,
    blockCount: 1,
    headCount: 2,
    headCountKv: 1,
    feedForwardLength: 12,
    contextLength: 16,
    rmsNormEpsilon: 1e-5,
    ropeFreqBase: 10000,
    tiedOutput: false
};
const rope = new RopeTable(16, 4, 10000);

/** Teacher rows of different sharpness per group, so the groups' D̂_T differ clearly. */
function groupBatch(random: Random, sharpness: number, lengths: number[]): TrainingSequence[] {
    return lengths.map((length) => {
        const tokens = Array.from({length}, () => Math.floor(random.nextDouble() * tiny.vocabularySize));
        const targetDistributions = tokens.slice(1).map((_token, position) => {
            if (position === 0) return undefined; // a prompt position: weight 0, no row
            const row = Float64Array.from({length: tiny.vocabularySize}, () => Math.exp(sharpness * random.nextDouble()));
            const total = row.reduce((sum, value) => sum + value, 0);
            return row.map((value) => value / total);
        });
        return {tokens, lossWeights: targetDistributions.map((row) => (row === undefined ? 0 : 1)), targetDistributions};
    });
}

function batches(): TrainingSequence[][] {
    const random = new Random(21);
    return [groupBatch(random, 1, [5, 6]), groupBatch(random, 8, [4, 7]), groupBatch(random, 4, [6, 5, 4])];
}

describe("fairnessWeightedGradient", () => {
    const weights = initializeLlamaWeights(tiny, {seed: 2, standardDeviation: 0.5, gainJitter: 0.3});

    it("combines the groups' gradients as Σ_T (D̂_T − D̂_min)/m ∇D̂_T, the best group getting weight 0", () => {
        const groups = batches();
        const result = fairnessWeightedGradient(
            tiny,
            weights,
            rope,
            groups.map((batch) => [batch]),
            "scdf"
        );
        const independent = groups.map((batch) => llamaLossAndGradients(tiny, weights, rope, batch));
        const divergences = independent.map((part) => part.loss);
        expect(result.divergences).toEqual(divergences);
        const minimum = Math.min(...divergences);
        const expectedWeights = divergences.map((value) => (value - minimum) / 3);
        expect(result.weights).toEqual(expectedWeights);
        const best = divergences.indexOf(minimum);
        expect(result.weights[best]).toBe(0);
        expect(result.weights.filter((weight) => weight > 0.01)).toHaveLength(2);
        for (const [name, combined] of result.gradients) {
            combined.forEach((value, index) => {
                const expected = independent.reduce(
                    (sum, part, group) => sum + expectedWeights[group] * part.gradients.get(name)![index],
                    0
                );
                expect(value).toBeCloseTo(expected, 14);
            });
        }
        expect(result.objective).toBeCloseTo(divergences.reduce((sum, value) => sum + (value - minimum) ** 2, 0) / 3, 14);
    });

    it("is the gradient of (1/2m) Σ (D_T − c)² with c = D_min held constant (central differences)", () => {
        const groups = batches();
        const {gradients, divergences} = fairnessWeightedGradient(
            tiny,
            weights,
            rope,
            groups.map((batch) => [batch]),
            "scdf"
        );
        const floor = Math.min(...divergences);
        const surrogate = () =>
            groupDivergences(tiny, weights, rope, groups).reduce((sum, value) => sum + (value - floor) ** 2, 0) / (2 * groups.length);
        const step = 1e-5;
        for (const {name} of llamaTensorLayout(tiny)) {
            const values = weights.get(name)!;
            const analytic = gradients.get(name)!;
            let difference = 0;
            let norm = 0;
            for (let i = 0; i < values.length; i++) {
                const original = values[i];
                values[i] = original + step;
                const above = surrogate();
                values[i] = original - step;
                const below = surrogate();
                values[i] = original;
                const numeric = (above - below) / (2 * step);
                difference += (numeric - analytic[i]) ** 2;
                norm += numeric ** 2 + analytic[i] ** 2;
            }
            expect(Math.sqrt(norm), `${name} gets a gradient`).toBeGreaterThan(1e-5);
            expect(Math.sqrt(difference / norm), name).toBeLessThan(1e-6);
        }
    });

    it("weights every group 1/m for the re-balancing baseline", () => {
        const groups = batches();
        const result = fairnessWeightedGradient(
            tiny,
            weights,
            rope,
            groups.map((batch) => [batch]),
            "rebalance"
        );
        expect(result.weights).toEqual([1 / 3, 1 / 3, 1 / 3]);
        const pooled = groups.map((batch) => llamaLossAndGradients(tiny, weights, rope, batch).gradients.get("output.weight")!);
        result.gradients.get("output.weight")!.forEach((value, index) =>
            expect(value).toBeCloseTo(
                pooled.reduce((sum, gradient) => sum + gradient[index] / 3, 0),
                14
            )
        );
    });
});

describe("groupDivergences", () => {
    it("equals llamaLossAndGradients' weighted loss per group, from the forward pass alone", () => {
        const weights = initializeLlamaWeights(tiny, {seed: 6, standardDeviation: 0.5});
        const groups = batches();
        const divergences = groupDivergences(tiny, weights, rope, groups);
        groups.forEach((batch, index) =>
            expect(divergences[index]).toBeCloseTo(llamaLossAndGradients(tiny, weights, rope, batch).loss, 13)
        );
        // Hard labels where no row is given, as in the loss.
        const hard = [{tokens: [1, 2, 3]}];
        expect(groupDivergences(tiny, weights, rope, [hard])[0]).toBeCloseTo(llamaLossAndGradients(tiny, weights, rope, hard).loss, 13);
    });

    it("accumulates several mini-batches per group: D̂_T and ∇D̂_T are their means, then weighted as one (Disparate Impacts paper D.1)", () => {
        const accumulationWeights = initializeLlamaWeights(tiny, {seed: 2, standardDeviation: 0.5, gainJitter: 0.3});
        // Each group gets two different mini-batches, so "the mean of the two" differs from either alone.
        const [first, second, third] = batches();
        const groups = [
            [first, second],
            [second, third],
            [third, first]
        ];
        const accumulated = fairnessWeightedGradient(tiny, accumulationWeights, rope, groups, "scdf");
        const parts = groups.map((pair) => pair.map((batch) => llamaLossAndGradients(tiny, accumulationWeights, rope, batch)));
        const divergences = parts.map(([a, b]) => (a.loss + b.loss) / 2);
        expect(accumulated.divergences).toEqual(divergences.map((value) => expect.closeTo(value, 14)));
        const minimum = Math.min(...divergences);
        const expectedWeights = divergences.map((value) => (value - minimum) / 3);
        accumulated.gradients.get("output.weight")!.forEach((value, index) => {
            const expected = parts.reduce(
                (sum, [a, b], group) =>
                    sum +
                    (expectedWeights[group] * (a.gradients.get("output.weight")![index] + b.gradients.get("output.weight")![index])) / 2,
                0
            );
            expect(value).toBeCloseTo(expected, 14);
        });
    });
});
