import {describe, expect, it} from "vitest";

import {InvalidInputError} from "../errors.js";
import {pairedTost} from "./pairedTost.js";

describe("pairedTost", () => {
    it("passes a large paired sample with few discordant prompts", () => {
        // n = 1000, b = 5 (target-only pass), c = 7 (speculative-only pass): difference = 0.002.
        // variance = (0.012 − 0.002²)/1000 = 0.000011996; SE = 0.00346352.
        // z_lower = 0.032/0.00346352 = 9.2391, z_upper = −0.028/0.00346352 = −8.0843: both p ≈ 0.
        // 90% CI = 0.002 ± 1.644854 × 0.00346352 = [−0.003697, 0.007697].
        const result = pairedTost({bothPass: 780, targetOnlyPass: 5, speculativeOnlyPass: 7, bothFail: 208}, 0.03);
        expect(result.difference).toBeCloseTo(0.002, 12);
        expect(result.standardError).toBeCloseTo(0.00346352, 7);
        expect(result.confidenceInterval.lower).toBeCloseTo(-0.003697, 5);
        expect(result.confidenceInterval.upper).toBeCloseTo(0.007697, 5);
        expect(result.pUpper).toBeLessThan(1e-10);
        expect(result.equivalent).toBe(true);
    });

    it("fails when the paired difference is too uncertain", () => {
        // n = 100, b = 2, c = 4: difference = 0.02; variance = (0.06 − 0.0004)/100 = 0.000596,
        // SE = 0.0244131; z_upper = (0.02 − 0.03)/0.0244131 = −0.409616 → p_upper = 0.341043;
        // z_lower = 0.05/0.0244131 = 2.048081 → p_lower = 0.020276.
        const result = pairedTost({bothPass: 90, targetOnlyPass: 2, speculativeOnlyPass: 4, bothFail: 4}, 0.03);
        expect(result.standardError).toBeCloseTo(0.0244131, 6);
        expect(result.pUpper).toBeCloseTo(0.341043, 5);
        expect(result.pLower).toBeCloseTo(0.020276, 5);
        expect(result.equivalent).toBe(false);
    });

    it("flags identical paired outcomes as degenerate", () => {
        const result = pairedTost({bothPass: 60, targetOnlyPass: 0, speculativeOnlyPass: 0, bothFail: 40}, 0.03);
        expect(result.degenerate).toBe(true);
        expect(result.equivalent).toBe(false);
        expect(result.difference).toBe(0);
    });

    it("rejects negative cells and an empty table", () => {
        expect(() => pairedTost({bothPass: 1, targetOnlyPass: -1, speculativeOnlyPass: 0, bothFail: 0}, 0.03)).toThrow(
            /table.targetOnlyPass/
        );
        expect(() => pairedTost({bothPass: 0, targetOnlyPass: 0, speculativeOnlyPass: 0, bothFail: 0}, 0.03)).toThrow(InvalidInputError);
    });
});
