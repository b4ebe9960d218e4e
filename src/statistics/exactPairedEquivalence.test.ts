import {describe, expect, it} from "vitest";

import {InvalidInputError} from "../errors.js";
import {clopperPearsonUpper, exactPairedEquivalence} from "./exactPairedEquivalence.js";

describe("exactPairedEquivalence", () => {
    it("passes 200 byte-identical pairs at 0.790 vs 0.790 (TAIS paper Table 4's matched rows) with p = 0.97^200", () => {
        // No discordant pair: both one-sided p-values are (1 − 0.03)^200 = 0.0022612.
        const result = exactPairedEquivalence({bothPass: 158, targetOnlyPass: 0, speculativeOnlyPass: 0, bothFail: 42}, 0.03);
        expect(result.p).toBeCloseTo(0.0022612, 7);
        expect(result.difference).toBe(0);
        expect(result.equivalent).toBe(true);
        expect(result.underpowered).toBe(false);
        // Below the paper's Holm threshold 0.0045 too (α = 0.05 over 11 tests, §3.5).
        expect(result.p).toBeLessThan(0.05 / 11);
        // Upper bound of a rate with 0 of 200: 1 − 0.05^(1/200) = 0.014867 (Clopper–Pearson, scipy beta.ppf(0.95, 1, 200)).
        expect(result.confidenceInterval.upper).toBeCloseTo(0.014867, 6);
        expect(result.confidenceInterval.lower).toBeCloseTo(-0.014867, 6);
    });

    it("does not show 40 identical pairs equivalent, and says n is the reason", () => {
        const result = exactPairedEquivalence({bothPass: 30, targetOnlyPass: 0, speculativeOnlyPass: 0, bothFail: 10}, 0.03);
        expect(result.p).toBeCloseTo(0.2957123, 7);
        expect(result.equivalent).toBe(false);
        expect(result.underpowered).toBe(true);
    });

    it("needs 99 identical pairs at ±3pp and α = 0.05 (0.97^98 = 0.0505, 0.97^99 = 0.0490)", () => {
        const table = (pairs: number) => ({bothPass: pairs, targetOnlyPass: 0, speculativeOnlyPass: 0, bothFail: 0});
        expect(exactPairedEquivalence(table(98), 0.03).underpowered).toBe(true);
        expect(exactPairedEquivalence(table(99), 0.03).equivalent).toBe(true);
    });

    it("takes each one-sided p-value from its own discordant count", () => {
        // b = 1 of 200: P(B ≤ 1 | 200, 0.03) = 0.0162483 (scipy binom.cdf); c = 2: 0.0592909.
        const result = exactPairedEquivalence({bothPass: 150, targetOnlyPass: 1, speculativeOnlyPass: 2, bothFail: 47}, 0.03);
        expect(result.pLower).toBeCloseTo(0.0162483, 6);
        expect(result.pUpper).toBeCloseTo(0.0592909, 6);
        expect(result.p).toBe(result.pUpper);
        expect(result.equivalent).toBe(false);
        expect(result.underpowered).toBe(false);
        // The same decision as the interval: c = 2 of 200 has the one-sided 95% Clopper–Pearson upper
        // bound 0.0311426 (scipy beta.ppf(0.95, 3, 198)), above the 0.03 margin.
        expect(result.confidenceInterval.upper).toBeCloseTo(0.0311426, 6);
    });

    it("passes a large table with few discordant pairs both ways", () => {
        // n = 1000, b = 5, c = 7: P(B ≤ 5) = 1.636e-8, P(C ≤ 7) = 3.980e-7 (scipy binom.cdf at 0.03).
        const result = exactPairedEquivalence({bothPass: 780, targetOnlyPass: 5, speculativeOnlyPass: 7, bothFail: 208}, 0.03);
        expect(result.pLower / 1.6363377e-8).toBeCloseTo(1, 5);
        expect(result.pUpper / 3.9804606e-7).toBeCloseTo(1, 5);
        expect(result.equivalent).toBe(true);
    });

    it("rejects bad tables and parameters by field", () => {
        expect(() => exactPairedEquivalence({bothPass: 1, targetOnlyPass: -1, speculativeOnlyPass: 0, bothFail: 0}, 0.03)).toThrow(
            /table.targetOnlyPass/
        );
        expect(() => exactPairedEquivalence({bothPass: 0, targetOnlyPass: 0, speculativeOnlyPass: 0, bothFail: 0}, 0.03)).toThrow(
            InvalidInputError
        );
        expect(() => exactPairedEquivalence({bothPass: 1, targetOnlyPass: 0, speculativeOnlyPass: 0, bothFail: 0}, 3)).toThrow(/margin/);
        expect(() => exactPairedEquivalence({bothPass: 1, targetOnlyPass: 0, speculativeOnlyPass: 0, bothFail: 0}, 0.03, 0.7)).toThrow(
            /alpha/
        );
    });
});

describe("clopperPearsonUpper", () => {
    it("matches the published exact interval for 1 of 10 (upper 0.4450 at 97.5%, R binom.test)", () => {
        expect(clopperPearsonUpper(1, 10, 0.025)).toBeCloseTo(0.4450161, 6);
        expect(clopperPearsonUpper(10, 10, 0.05)).toBe(1);
    });
});
