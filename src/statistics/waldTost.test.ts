import {describe, expect, it} from "vitest";

import {InvalidInputError} from "../errors.js";
import {waldTost} from "./waldTost.js";

describe("waldTost", () => {
    it("passes a small difference with enough data", () => {
        // target 2500/5000 = 0.50, speculative 2550/5000 = 0.51, margin 0.03, α = 0.05.
        // SE = √(0.25/5000 + 0.2499/5000) = √0.00009998 = 0.0099990
        // z_lower = (0.01 + 0.03)/0.0099990 = 4.0004  → p_lower = 1 − Φ(4.0004) = 3.16e-5
        // z_upper = (0.01 − 0.03)/0.0099990 = −2.0002 → p_upper = Φ(−2.0002) = 0.022739
        // 90% CI = 0.01 ± 1.644854 × 0.0099990 = [−0.006447, 0.026447], inside ±0.03.
        const result = waldTost({successes: 2500, total: 5000}, {successes: 2550, total: 5000}, 0.03, 0.05);
        expect(result.difference).toBeCloseTo(0.01, 12);
        expect(result.standardError).toBeCloseTo(0.009999, 6);
        expect(result.pLower).toBeCloseTo(3.16e-5, 6);
        expect(result.pUpper).toBeCloseTo(0.022739, 5);
        expect(result.p).toBe(result.pUpper);
        expect(result.confidenceInterval.lower).toBeCloseTo(-0.006447, 5);
        expect(result.confidenceInterval.upper).toBeCloseTo(0.026447, 5);
        expect(result.confidenceInterval.level).toBeCloseTo(0.9, 12);
        expect(result.equivalent).toBe(true);
        expect(result.degenerate).toBe(false);
    });

    it("fails equal rates when the sample is too small (underpowered, not different)", () => {
        // 50/100 vs 50/100: SE = √(0.0025 + 0.0025) = 0.0707107; z = 0.03/0.0707107 = 0.424264
        // → both p = 1 − Φ(0.424264) = 0.335687; 90% CI = ±1.644854 × 0.0707107 = ±0.116309.
        const result = waldTost({successes: 50, total: 100}, {successes: 50, total: 100}, 0.03);
        expect(result.pLower).toBeCloseTo(0.335687, 5);
        expect(result.pUpper).toBeCloseTo(0.335687, 5);
        expect(result.confidenceInterval.upper).toBeCloseTo(0.116309, 5);
        expect(result.equivalent).toBe(false);
    });

    it("fails when the difference sits on the margin", () => {
        // 2500/5000 vs 2650/5000: difference exactly 0.03 → z_upper = 0 → p_upper = Φ(0) = 0.5.
        const result = waldTost({successes: 2500, total: 5000}, {successes: 2650, total: 5000}, 0.03);
        expect(result.pUpper).toBeCloseTo(0.5, 10);
        expect(result.equivalent).toBe(false);
    });

    it("flags both arms at 1 or both at 0 as degenerate, never as a pass", () => {
        for (const [target, speculative] of [
            [100, 120],
            [0, 0]
        ]) {
            const result = waldTost({successes: target, total: 100}, {successes: speculative, total: 120}, 0.03);
            expect(result.degenerate).toBe(true);
            expect(result.equivalent).toBe(false);
            expect(result.pLower).toBeNull();
            expect(result.pUpper).toBeNull();
            expect(result.standardError).toBe(0);
        }
    });

    it("is not degenerate when only one arm sits at the ceiling", () => {
        // 100/100 vs 98/100: SE = √(0 + 0.98 × 0.02/100) = 0.014 > 0.
        const result = waldTost({successes: 100, total: 100}, {successes: 98, total: 100}, 0.03);
        expect(result.degenerate).toBe(false);
        expect(result.standardError).toBeCloseTo(0.014, 10);
    });

    it("rejects bad counts and parameters", () => {
        expect(() => waldTost({successes: 5, total: 4}, {successes: 1, total: 4}, 0.03)).toThrow(/target.successes/);
        expect(() => waldTost({successes: 1, total: 4}, {successes: 1, total: 0}, 0.03)).toThrow(/speculative.total/);
        expect(() => waldTost({successes: 1, total: 4}, {successes: 1, total: 4}, 3)).toThrow(InvalidInputError);
        expect(() => waldTost({successes: 1, total: 4}, {successes: 1, total: 4}, 0.03, 0.5)).toThrow(/alpha/);
    });
});
