import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../../errors.js";
import {adamWUpdate} from "./adamWUpdate.js";
import {clipGradientNorm} from "./clipGradientNorm.js";
import {learningRateAt} from "./learningRateAt.js";
import {checkTrainingOptions, defaultTrainingOptions, type TrainingOptions} from "./TrainingOptions.js";

const options: TrainingOptions = {
    ...defaultTrainingOptions,
    seed: 1,
    learningRate: 1,
    warmupSteps: 10,
    totalSteps: 110,
    minimumLearningRateRatio: 0.1
};

describe("learningRateAt", () => {
    it("warms up linearly, peaks, decays along a cosine to the minimum and stays there", () => {
        expect(learningRateAt(0, options)).toBeCloseTo(0.1, 12);
        expect(learningRateAt(4, options)).toBeCloseTo(0.5, 12);
        expect(learningRateAt(10, options)).toBeCloseTo(1, 12);
        expect(learningRateAt(60, options)).toBeCloseTo(0.55, 12); // halfway: (1 + 0.1) / 2
        expect(learningRateAt(110, options)).toBeCloseTo(0.1, 12);
        expect(learningRateAt(500, options)).toBeCloseTo(0.1, 12);
        for (let step = 10; step < 110; step++) expect(learningRateAt(step + 1, options)).toBeLessThan(learningRateAt(step, options));
    });
});

describe("clipGradientNorm", () => {
    it("scales gradients down to the maximum norm and leaves small ones alone", () => {
        const gradients = new Map([
            ["a", Float64Array.of(3, 0)],
            ["b", Float64Array.of(0, 4)]
        ]);
        expect(clipGradientNorm(gradients, 10)).toBe(5);
        expect([...gradients.get("a")!, ...gradients.get("b")!]).toEqual([3, 0, 0, 4]);
        expect(clipGradientNorm(gradients, 1)).toBe(5);
        expect([...gradients.get("a")!, ...gradients.get("b")!].map((value) => Number(value.toFixed(12)))).toEqual([0.6, 0, 0, 0.8]);
    });
});

describe("adamWUpdate", () => {
    it("moves each weight by about the learning rate on the first step and decays matrices only", () => {
        const weights = new Map([
            ["matrix", Float64Array.of(1, -2)],
            ["attn_norm.weight", Float64Array.of(1, 1)]
        ]);
        const gradients = new Map([
            ["matrix", Float64Array.of(0.5, -0.001)],
            ["attn_norm.weight", Float64Array.of(2, 0)]
        ]);
        const zeros = (): Map<string, Float64Array> =>
            new Map([
                ["matrix", new Float64Array(2)],
                ["attn_norm.weight", new Float64Array(2)]
            ]);
        const moments = {first: zeros(), second: zeros()};
        const settings = {beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0.1};
        adamWUpdate(weights, gradients, moments, 1, 0.01, settings, (name) => !name.includes("_norm."));
        // Bias-corrected first step: m̂/sqrt(v̂) = sign(g), so w −= lr·(sign(g) + λ·w) for matrices.
        expect(weights.get("matrix")![0]).toBeCloseTo(1 - 0.01 * (1 + 0.1 * 1), 9);
        expect(weights.get("matrix")![1]).toBeCloseTo(-2 - 0.01 * (-1 + 0.1 * -2), 6);
        expect(weights.get("attn_norm.weight")![0]).toBeCloseTo(1 - 0.01, 9);
        expect(weights.get("attn_norm.weight")![1]).toBe(1);
        expect(moments.first.get("matrix")![0]).toBeCloseTo(0.05, 12);
        expect(moments.second.get("matrix")![0]).toBeCloseTo(0.05 * 0.25, 12);
    });
});

describe("checkTrainingOptions", () => {
    it("names the first bad option", () => {
        expect(() => checkTrainingOptions(options)).not.toThrow();
        expect(() => checkTrainingOptions({...options, batchSize: 0})).toThrow(/batchSize: must be at least 1/);
        expect(() => checkTrainingOptions({...options, learningRate: -1})).toThrow(InvalidInputError);
        expect(() => checkTrainingOptions({...options, beta2: 1.5})).toThrow(/beta2/);
    });
});
