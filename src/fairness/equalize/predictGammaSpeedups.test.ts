import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../../errors.js";
import {predictGammaSpeedups} from "./predictGammaSpeedups.js";

// t_T(k) = 1 + 0.2·(k − 1) ms, t_D = 0.1 ms: a compute-bound verifier that charges 0.2 per extra token.
const costs = {targetMilliseconds: [1, 1.2, 1.4, 1.6, 1.8], draftMilliseconds: 0.1};

describe("predictGammaSpeedups", () => {
    it("keeps a poorly drafted group at γ = 1 (α = 0.5)", () => {
        const prediction = predictGammaSpeedups(0.5, 4, costs);
        // f_1 = 1.5, f_2 = 1.75, f_3 = 1.875, f_4 = 1.9375 over 0.1γ + t_T(γ+1) = 1.3, 1.6, 1.9, 2.2
        expect(prediction.speedups[0]).toBeCloseTo(1.5 / 1.3, 12);
        expect(prediction.speedups[1]).toBeCloseTo(1.09375, 12);
        expect(prediction.speedups[2]).toBeCloseTo(1.875 / 1.9, 12);
        expect(prediction.speedups[3]).toBeCloseTo(1.9375 / 2.2, 12);
        expect(prediction.bestGamma).toBe(1);
        expect(prediction.bestSpeedup).toBeCloseTo(1.5 / 1.3, 12);
    });

    it("sends a well drafted group to the cap (α = 0.9)", () => {
        const prediction = predictGammaSpeedups(0.9, 4, costs);
        // f_γ(0.9) = 1.9, 2.71, 3.439, 4.0951
        expect(prediction.speedups.map((value) => Number(value.toFixed(6)))).toEqual([1.461538, 1.69375, 1.81, 1.861409]);
        expect(prediction.bestGamma).toBe(4);
        expect(predictGammaSpeedups(0.9, 2, costs).bestGamma).toBe(2);
    });

    it("breaks a tie towards the smaller γ", () => {
        // α = 0: S = 1 / (γ·t_D + t_T(γ+1)) = 1/2 at γ = 1 (0.5 + 1.5) and at γ = 2 (1 + 1).
        const prediction = predictGammaSpeedups(0, 2, {targetMilliseconds: [1, 1.5, 1], draftMilliseconds: 0.5});
        expect(prediction.speedups).toEqual([0.5, 0.5]);
        expect(prediction.bestGamma).toBe(1);
    });

    it("rejects a cost curve too short for the γ range and a bad range", () => {
        expect(() => predictGammaSpeedups(0.5, 5, costs)).toThrow(/costs.targetMilliseconds: has t_T\(k\) up to k = 5; γ = 5 needs k = 6/);
        expect(() => predictGammaSpeedups(0.5, 0, costs)).toThrow(InvalidInputError);
        expect(() => predictGammaSpeedups(0.5, 2, {targetMilliseconds: [1, 0, 1], draftMilliseconds: 0.1})).toThrow(InvalidInputError);
    });
});
