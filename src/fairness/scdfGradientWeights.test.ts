import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../errors.js";
import {scdfGradientWeights} from "./scdfGradientWeights.js";
import {unfairness} from "./unfairness.js";

describe("scdfGradientWeights", () => {
    it("weights each task by its excess over the best, which gets exactly 0", () => {
        // D̂ = [1.2, 0.5, 0.9]: floor 0.5, excess [0.7, 0, 0.4], weights excess/3.
        const result = scdfGradientWeights([1.2, 0.5, 0.9]);
        expect(result.floor).toBe(0.5);
        expect(result.bestTask).toBe(1);
        expect(result.excess[1]).toBe(0);
        expect(result.excess[0]).toBeCloseTo(0.7, 12);
        expect(result.excess[2]).toBeCloseTo(0.4, 12);
        expect(result.weights.map((weight) => weight * 3)).toEqual(result.excess.map((value) => expect.closeTo(value, 12)));
        // Tied best tasks both get 0.
        expect(scdfGradientWeights([0.3, 0.8, 0.3]).weights.filter((weight) => weight === 0)).toHaveLength(2);
    });

    it("equals half the gradient of Û with D_min held constant (finite differences)", () => {
        const divergences = [1.2, 0.5, 0.9, 0.75];
        const {weights, floor} = scdfGradientWeights(divergences);
        const heldFloor = (values: readonly number[]) => values.reduce((sum, value) => sum + (value - floor) ** 2, 0) / values.length;
        const step = 1e-6;
        divergences.forEach((_value, task) => {
            const up = divergences.map((value, index) => (index === task ? value + step : value));
            const down = divergences.map((value, index) => (index === task ? value - step : value));
            expect((heldFloor(up) - heldFloor(down)) / (2 * step) / 2).toBeCloseTo(weights[task], 8);
        });
        // The true gradient of U differs on the best task: raising D_min lowers U (the term s-CDF drops).
        const best = 1;
        const trueSlope =
            (unfairness(divergences.map((value, index) => (index === best ? value + step : value))) -
                unfairness(divergences.map((value, index) => (index === best ? value - step : value)))) /
            (2 * step);
        expect(trueSlope).toBeLessThan(-0.1);
        expect(weights[best]).toBe(0);
    });

    it("rejects fewer than two tasks and non-finite divergences", () => {
        expect(() => scdfGradientWeights([0.4])).toThrow(InvalidInputError);
        expect(() => scdfGradientWeights([0.4, Infinity])).toThrow(/divergences\.1/);
    });
});
