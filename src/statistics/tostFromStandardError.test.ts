import {describe, expect, it} from "vitest";

import {InvalidInputError} from "../errors.js";
import {tostFromStandardError} from "./tostFromStandardError.js";

describe("tostFromStandardError", () => {
    it("computes both one-sided p-values and the 1 − 2α interval", () => {
        // difference 0, SE 0.01, margin 0.03: z = ±3 → p = 1 − Φ(3) = 0.0013499 on both sides.
        // 90% CI = ±1.644854 × 0.01 = ±0.01644854.
        const result = tostFromStandardError(0, 0.01, 0.03, 0.05);
        expect(result.pLower).toBeCloseTo(0.0013499, 6);
        expect(result.pUpper).toBeCloseTo(0.0013499, 6);
        expect(result.confidenceInterval.upper).toBeCloseTo(0.01644854, 7);
        expect(result.equivalent).toBe(true);
    });

    it("uses the α given for both the tests and the interval", () => {
        // α = 0.001: z_{0.999} = 3.090232 > 3, so p = 0.00135 no longer passes; 99.8% CI = ±0.03090232.
        const result = tostFromStandardError(0, 0.01, 0.03, 0.001);
        expect(result.equivalent).toBe(false);
        expect(result.confidenceInterval.level).toBeCloseTo(0.998, 12);
        expect(result.confidenceInterval.upper).toBeCloseTo(0.03090232, 7);
    });

    it("marks a zero standard error degenerate", () => {
        const result = tostFromStandardError(0, 0, 0.03, 0.05);
        expect(result).toMatchObject({degenerate: true, equivalent: false, p: null});
    });

    it("rejects bad arguments by name", () => {
        expect(() => tostFromStandardError(Number.NaN, 0.01, 0.03, 0.05)).toThrow(/difference/);
        expect(() => tostFromStandardError(0, -1, 0.03, 0.05)).toThrow(/standardError/);
        expect(() => tostFromStandardError(0, 0.01, 0, 0.05)).toThrow(InvalidInputError);
    });
});
