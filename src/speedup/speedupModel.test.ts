import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../errors.js";
import {
    bestGamma,
    expectedAcceptedPerStep,
    expectedTokensPerStep,
    expectedTokensPerStepFromPositions,
    fsdSequenceBound,
    speedupFromCostCurve,
    speedupFromCostRatio
} from "./speedupModel.js";

describe("speed-up model", () => {
    it("f_γ(α) on hand-computed values", () => {
        // (1 − 0.8^5) / 0.2 = (1 − 0.32768) / 0.2 = 3.3616
        expect(expectedTokensPerStep(0.8, 4)).toBeCloseTo(3.3616, 12);
        expect(expectedTokensPerStep(0, 4)).toBe(1);
        expect(expectedTokensPerStep(1, 4)).toBe(5);
        expect(expectedTokensPerStep(0.5, 0)).toBe(1);
        expect(expectedAcceptedPerStep(0.8, 4)).toBeCloseTo(2.3616, 12);
    });

    it("per-position form reduces to f_γ(α) for constant α", () => {
        expect(expectedTokensPerStepFromPositions([0.8, 0.8, 0.8, 0.8])).toBeCloseTo(expectedTokensPerStep(0.8, 4), 14);
        // 1 + 0.9 + 0.9·0.5 = 2.35
        expect(expectedTokensPerStepFromPositions([0.9, 0.5])).toBeCloseTo(2.35, 14);
    });

    it(`S(α, γ, c) = f/(1 + γc) (the table of "Fast Inference from Transformers via Speculative Decoding": α = 0.8, γ = 4, c = 0.05 → 3.3616/1.2)`, () => {
        expect(speedupFromCostRatio(0.8, 4, 0.05)).toBeCloseTo(3.3616 / 1.2, 12);
        expect(speedupFromCostRatio(0.8, 4, 0)).toBeCloseTo(3.3616, 12);
    });

    it("cost-curve form: a compute-bound verifier (t(5) = 3·t(1)) cuts the limit", () => {
        const memoryBound = speedupFromCostCurve(0.8, 4, {targetTimeOne: 1, targetTimeVerify: 1, draftTime: 0.05});
        const computeBound = speedupFromCostCurve(0.8, 4, {targetTimeOne: 1, targetTimeVerify: 3, draftTime: 0.05});
        expect(memoryBound).toBeCloseTo(speedupFromCostRatio(0.8, 4, 0.05), 12);
        expect(computeBound).toBeCloseTo(3.3616 / 3.2, 12);
    });

    it("bestGamma picks the γ maximising the cost-curve speed-up", () => {
        // Flat verification cost: larger γ keeps helping up to the cap while α is high and drafts are cheap.
        expect(bestGamma(0.9, 8, () => 1, 0.01).gamma).toBe(8);
        // Verification cost linear in tokens: one draft token is never worth it.
        expect(bestGamma(0.5, 8, (tokens) => tokens, 0.5).gamma).toBe(1);
    });

    it("FSD's sequence-level bound N·%draft·T", () => {
        expect(fsdSequenceBound(100, 0.6, 0.4)).toBeCloseTo(24, 12);
    });

    it("rejects out-of-range inputs with a typed error naming the field", () => {
        expect(() => expectedTokensPerStep(1.2, 4)).toThrow(InvalidInputError);
        expect(() => expectedTokensPerStep(0.5, -1)).toThrow(/gamma/);
        expect(() => speedupFromCostRatio(0.5, 2, -1)).toThrow(/costRatio/);
        expect(() => speedupFromCostCurve(0.5, 2, {targetTimeOne: 0, targetTimeVerify: 1, draftTime: 1})).toThrow(/targetTimeOne/);
        expect(() => expectedTokensPerStepFromPositions([0.5, NaN])).toThrow(/alphas\.1/);
    });
});
