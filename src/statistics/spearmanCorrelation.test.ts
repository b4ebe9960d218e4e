import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../errors.js";
import {spearmanCorrelation} from "./spearmanCorrelation.js";

describe("spearmanCorrelation", () => {
    it("reproduces the textbook IQ vs hours-of-TV example", () => {
        // Wikipedia, "Spearman's rank correlation coefficient": no ties, Σd² = 194,
        // ρ = 1 − 6·194 / (10·(100 − 1)) = −29/165 = −0.175757…
        const iq = [106, 86, 100, 101, 99, 103, 97, 113, 112, 110];
        const television = [7, 0, 27, 50, 28, 29, 20, 12, 6, 17];
        expect(spearmanCorrelation(iq, television)).toBeCloseTo(-29 / 165, 12);
    });

    it("gives tied values their average rank", () => {
        // Ranks of x: [1, 2.5, 2.5, 4]; y ranks: [1, 2, 3, 4]. Means 2.5; deviations
        // x: [−1.5, 0, 0, 1.5], y: [−1.5, −0.5, 0.5, 1.5]; cov = 4.5, Σdx² = 4.5, Σdy² = 5,
        // ρ = 4.5 / √(4.5·5) = 0.948683.
        expect(spearmanCorrelation([1, 2, 2, 3], [10, 20, 30, 40])).toBeCloseTo(0.948683, 6);
    });

    it("is ±1 for monotone relations whatever their shape, NaN for a constant sample", () => {
        expect(spearmanCorrelation([1, 2, 3, 4], [1, 8, 27, 64])).toBeCloseTo(1, 12);
        expect(spearmanCorrelation([1, 2, 3, 4], [5, 3, 2, -10])).toBeCloseTo(-1, 12);
        expect(spearmanCorrelation([1, 2, 3], [4, 4, 4])).toBeNaN();
    });

    it("rejects unequal lengths, fewer than two pairs and non-finite values", () => {
        expect(() => spearmanCorrelation([1, 2], [1])).toThrow(InvalidInputError);
        expect(() => spearmanCorrelation([1], [1])).toThrow(/at least 2/);
        expect(() => spearmanCorrelation([1, NaN], [1, 2])).toThrow(InvalidInputError);
    });
});
