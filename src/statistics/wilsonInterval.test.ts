import {describe, expect, it} from "vitest";

import {InvalidInputError} from "../errors.js";
import {wilsonInterval} from "./wilsonInterval.js";

describe("wilsonInterval", () => {
    // Published 95% Wilson CIs from the TAIS paper (Table 4 and Table 1), with the counts they imply.
    it.each([
        [158, 200, 0.728, 0.841], // p = 0.790, Table 4 core rows
        [194, 200, 0.936, 0.986], // p = 0.970
        [196, 200, 0.95, 0.992], // p = 0.980
        [156, 200, 0.718, 0.832], // p = 0.780, Table 4 E5 row
        [587, 700, 0.809, 0.864], // E1 AdvBench Phases 2–4, refusal 0.839
        [168, 200, 0.783, 0.884], // E1 AdvBench Phases 2+3
        [848, 2100, 0.383, 0.425] // E1 Phase 4, 0.4038
    ])("reproduces the published interval for %i/%i", (successes, total, lower, upper) => {
        const interval = wilsonInterval(successes, total);
        expect(interval.lower).toBeCloseTo(lower, 3);
        expect(interval.upper).toBeCloseTo(upper, 3);
    });

    it("is [0, z²/(n+z²)] at zero successes", () => {
        // Hand: z = 1.959964, z² = 3.841459; upper = 3.841459 / (10 + 3.841459) = 0.277533.
        const interval = wilsonInterval(0, 10);
        expect(interval.lower).toBe(0);
        expect(interval.upper).toBeCloseTo(0.277533, 5);
    });

    it("is [n/(n+z²), 1] at n successes", () => {
        // Hand: 10 / 13.841459 = 0.722467.
        const interval = wilsonInterval(10, 10);
        expect(interval.lower).toBeCloseTo(0.722467, 5);
        expect(interval.upper).toBe(1);
    });

    it("is right at one success", () => {
        // Hand, 1/10: z² = 3.841459, denominator 1 + z²/10 = 1.3841459,
        // centre = (0.1 + z²/20)/1.3841459 = 0.211013,
        // half-width = (1.959964/1.3841459) × √(0.1 × 0.9/10 + z²/400) = 1.416012 × 0.136395 = 0.193137.
        const interval = wilsonInterval(1, 10);
        expect(interval.lower).toBeCloseTo(0.017876, 5);
        expect(interval.upper).toBeCloseTo(0.40415, 5);
    });

    // Newcombe (1998), Statistics in Medicine 17:857, Table I, method 3 (Wilson score, no continuity correction).
    it.each([
        [81, 263, 0.2553, 0.3662],
        [15, 148, 0.0624, 0.1605],
        [0, 20, 0, 0.1611],
        [1, 29, 0.0061, 0.1718]
    ])("reproduces Newcombe's published interval for %i/%i", (successes, total, lower, upper) => {
        const interval = wilsonInterval(successes, total);
        expect(interval.lower).toBeCloseTo(lower, 4);
        expect(interval.upper).toBeCloseTo(upper, 4);
    });

    it("honours another confidence level", () => {
        // 90%: z = 1.644854, z² = 2.705543; upper at 0/20 = 2.705543 / 22.705543 = 0.119158.
        expect(wilsonInterval(0, 20, 0.9).upper).toBeCloseTo(0.119158, 5);
    });

    it("rejects impossible counts", () => {
        expect(() => wilsonInterval(11, 10)).toThrow(InvalidInputError);
        expect(() => wilsonInterval(-1, 10)).toThrow(/successes/);
        expect(() => wilsonInterval(1, 0)).toThrow(/total/);
        expect(() => wilsonInterval(1.5, 10)).toThrow(InvalidInputError);
    });
});
