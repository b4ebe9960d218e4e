import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../errors.js";
import {unfairness} from "./unfairness.js";

describe("unfairness", () => {
    it("is the mean squared excess over the best task", () => {
        // The Disparate Impacts paper §8.2's bilingual figures: D_en = 0.47, D_ja = 1.08; U = (0² + 0.61²)/2 = 0.18605.
        expect(unfairness([0.47, 1.08])).toBeCloseTo(0.18605, 12);
        // D = [1, 2, 4]: excesses 0, 1, 3; U = (0 + 1 + 9)/3 = 10/3. Order does not matter.
        expect(unfairness([4, 1, 2])).toBeCloseTo(10 / 3, 12);
    });

    it("is 0 for equal tasks and for a single task, and grows with the worst task's excess", () => {
        expect(unfairness([0.8, 0.8, 0.8])).toBe(0);
        expect(unfairness([0.8])).toBe(0);
        expect(unfairness([0.5, 1.5])).toBeGreaterThan(unfairness([0.5, 1.0]));
    });

    it("treats an infinitely misfit task as infinite unfairness unless every task is", () => {
        expect(unfairness([0.5, Infinity])).toBe(Infinity);
        expect(unfairness([Infinity, Infinity])).toBe(0);
    });

    it("rejects no tasks, negative and NaN divergences", () => {
        expect(() => unfairness([])).toThrow(InvalidInputError);
        expect(() => unfairness([0.2, -0.1])).toThrow(/divergences\.1/);
        expect(() => unfairness([NaN, 1])).toThrow(InvalidInputError);
    });
});
