import binomialCdf from "@stdlib/stats-base-dists-binomial-cdf";
import {describe, expect, it} from "vitest";

import {InvalidInputError} from "../errors.js";
import {
    holmPairsTable,
    minimumPairsForEquivalence,
    pairedScoreEquivalence,
    upperNullPValue,
    upperRejectionThresholds,
    upperTailThresholds
} from "./pairedScoreEquivalence.js";
import {tangoScore} from "./tangoScore.js";

const MARGIN = 0.03;
const ALPHA = 0.05;

/** A table of n pairs with b target-only and c speculative-only passes (the concordant split does not matter). */
function table(pairs: number, targetOnlyPass: number, speculativeOnlyPass: number) {
    return {bothPass: pairs - targetOnlyPass - speculativeOnlyPass, targetOnlyPass, speculativeOnlyPass, bothFail: 0};
}

describe("tangoScore", () => {
    it("matches a hand calculation of Tango's eq. 3 for 3 flips each way out of 200", () => {
        // 2·200·x² + (−6 + 400·0.03)·x − 3·0.03·0.97 = 0 → x = 0.0090680; Z = −6 / √(200·(2x + 0.0291)).
        expect(tangoScore(200, 3, 3, MARGIN)).toBeCloseTo(-1.95209, 4);
        expect(tangoScore(200, 3, 3, -MARGIN)).toBeCloseTo(1.95209, 4);
    });

    it("is finite at b = c = 0: −√(nΔ/(1 − Δ))", () => {
        expect(tangoScore(100, 0, 0, MARGIN)).toBeCloseTo(-Math.sqrt((100 * 0.03) / 0.97), 12);
    });

    it("rises with c at a fixed number of discordant pairs, so the tail is a threshold in c", () => {
        for (let discordant = 0; discordant <= 80; discordant++) {
            for (let c = 1; c <= discordant; c++) {
                expect(tangoScore(80, discordant - c, c, MARGIN)).toBeGreaterThan(tangoScore(80, discordant - c + 1, c - 1, MARGIN));
            }
        }
    });
});

describe("pairedScoreEquivalence", () => {
    it("calls 3 flips each way out of 200 pairs equivalent at ±3pp (the discordance bounds gave p = 0.147)", () => {
        const result = pairedScoreEquivalence(table(200, 3, 3), MARGIN, ALPHA);
        expect(result.difference).toBe(0);
        expect(result.p).toBeGreaterThan(0.02);
        expect(result.p).toBeLessThan(0.035);
        expect(result.equivalent).toBe(true);
        // The exact tail is a little above the normal one: the asymptotic test is the liberal one.
        expect(result.p).toBeGreaterThanOrEqual(result.asymptoticP);
    });

    it("calls 12 flips one way out of 200 pairs (d̂ = +6pp) not equivalent", () => {
        const result = pairedScoreEquivalence(table(200, 0, 12), MARGIN, ALPHA);
        expect(result.difference).toBeCloseTo(0.06, 12);
        expect(result.pUpper).toBeGreaterThan(0.9);
        expect(result.equivalent).toBe(false);
    });

    it("is defined at b = c = 0 and passes identical arms from 99 pairs at ±3pp and α = 0.05", () => {
        expect(minimumPairsForEquivalence(MARGIN, ALPHA)).toBe(99);
        const short = pairedScoreEquivalence(table(98, 0, 0), MARGIN, ALPHA);
        expect(short.equivalent).toBe(false);
        expect(short.underpowered).toBe(true);
        const enough = pairedScoreEquivalence(table(99, 0, 0), MARGIN, ALPHA);
        expect(enough.p).toBeLessThan(ALPHA);
        expect(enough.equivalent).toBe(true);
        expect(enough.scoreInterval.lower).toBeLessThan(0);
        expect(enough.scoreInterval.upper).toBeGreaterThan(0);
        expect(enough.scoreInterval.upper).toBeLessThan(MARGIN);
    });

    it("is symmetric: swapping the arms swaps the one-sided p-values", () => {
        const forward = pairedScoreEquivalence(table(300, 2, 7), MARGIN, ALPHA);
        const backward = pairedScoreEquivalence(table(300, 7, 2), MARGIN, ALPHA);
        expect(backward.pLower).toBeCloseTo(forward.pUpper, 12);
        expect(backward.pUpper).toBeCloseTo(forward.pLower, 12);
    });

    it("equals the supremum, over a fine grid of the nuisance rate, of the exact tail by direct trinomial enumeration", () => {
        const pairs = 40;
        for (const [b, c] of [
            [0, 0],
            [1, 2],
            [3, 0]
        ]) {
            const observed = tangoScore(pairs, b, c, MARGIN);
            let supremum = 0;
            for (let step = 0; step <= 800; step++) {
                const discordance = MARGIN + ((1 - MARGIN) * step) / 800;
                supremum = Math.max(supremum, trinomialTail(pairs, discordance, observed));
            }
            expect(upperNullPValue(pairs, b, c, MARGIN)).toBeCloseTo(supremum, 6);
        }
    });

    it("rejects bad margins and levels with InvalidInputError", () => {
        expect(() => pairedScoreEquivalence(table(100, 0, 0), 0, ALPHA)).toThrow(InvalidInputError);
        expect(() => pairedScoreEquivalence(table(100, 0, 0), MARGIN, 0.5)).toThrow(InvalidInputError);
    });
});

/** P(Z ≤ observed) under d = margin and discordance ψ, summing the trinomial over every (b, c). */
function trinomialTail(pairs: number, discordance: number, observed: number): number {
    const speculative = (discordance + MARGIN) / 2;
    const target = (discordance - MARGIN) / 2;
    const logFactorials = [0];
    for (let i = 1; i <= pairs; i++) logFactorials.push(logFactorials[i - 1] + Math.log(i));
    const logFactorial = (k: number) => logFactorials[k];
    let tail = 0;
    for (let b = 0; b <= pairs; b++) {
        for (let c = 0; b + c <= pairs; c++) {
            if (tangoScore(pairs, b, c, MARGIN) > observed + 1e-9) continue;
            if ((target === 0 && b > 0) || (discordance === 1 && b + c < pairs)) continue;
            const logProbability =
                logFactorial(pairs) -
                logFactorial(b) -
                logFactorial(c) -
                logFactorial(pairs - b - c) +
                (b > 0 ? b * Math.log(target) : 0) +
                c * Math.log(speculative) +
                (pairs - b - c > 0 ? (pairs - b - c) * Math.log(1 - discordance) : 0);
            tail += Math.exp(logProbability);
        }
    }
    return tail;
}

/**
 * Exact size of the two one-sided tests at d = +margin: Σ_D P(D) · P(D − k(D) ≤ C ≤ k(D) | D), where
 * k(D) is the largest c rejecting H0+ and, by symmetry, b ≤ k(D) is where H0− is rejected.
 * P(D) comes from differences of the binomial distribution function, not from the code under test.
 */
function exactSize(pairs: number, discordance: number, rejection: Int32Array): number {
    const speculativeShare = (discordance + MARGIN) / (2 * discordance);
    let size = 0;
    let previous = 0;
    for (let discordant = 0; discordant <= pairs; discordant++) {
        const cumulative = binomialCdf(discordant, pairs, discordance);
        const weight = cumulative - previous;
        previous = cumulative;
        const upper = rejection[discordant];
        const lower = discordant - upper;
        if (upper < 0 || lower > upper || weight < 1e-300) continue;
        const inside =
            binomialCdf(upper, discordant, speculativeShare) - (lower > 0 ? binomialCdf(lower - 1, discordant, speculativeShare) : 0);
        size += weight * inside;
    }
    return size;
}

// Discordance rates ψ = π_b + π_c from the one-way boundary ψ = Δ to almost every pair discordant, off the test's own grid.
const DISCORDANCE_GRID = [0.03, 0.0307, 0.037, 0.061, 0.13, 0.29, 0.57, 0.83, 0.9957];

describe("type-I error of the paired equivalence test at |d| = Δ (exact enumeration)", () => {
    it.each([30, 60, 99, 100, 150, 200, 500, 1000, 5000])("is at most α = 0.05 at n = %i pairs over ψ from Δ to 1", (pairs) => {
        const rejection = upperRejectionThresholds(pairs, MARGIN, ALPHA);
        // The region is the public test's: the last rejected table of a few D values rejects, the next does not.
        for (const discordant of [0, 1, Math.floor(pairs / 10), Math.floor(pairs / 2)]) {
            const last = rejection[discordant];
            if (last >= 0) expect(upperNullPValue(pairs, discordant - last, last, MARGIN)).toBeLessThan(ALPHA);
            if (last + 1 <= discordant)
                expect(upperNullPValue(pairs, discordant - last - 1, last + 1, MARGIN)).toBeGreaterThanOrEqual(ALPHA);
        }
        const sizes = DISCORDANCE_GRID.map((discordance) => exactSize(pairs, discordance, rejection));
        for (const size of sizes) expect(size).toBeLessThanOrEqual(ALPHA + 1e-9);
    });

    it("would catch a liberal test: Tango's normal approximation exceeds α at n = 88, ψ = Δ", () => {
        // Rejecting H0+ iff Z ≤ −1.645 (no supremum) passes c = 0 at 88 pairs, and P(C = 0) = 0.97^88 = 0.068.
        const asymptotic = upperTailThresholds(88, MARGIN, -1.6448536269514722);
        expect(exactSize(88, MARGIN, asymptotic)).toBeGreaterThan(0.06);
    });
});

describe("holmPairsTable", () => {
    it("gives the pairs per task identical arms need when Holm adjusts over several tasks", () => {
        const rows = holmPairsTable(MARGIN, ALPHA, [1, 3, 6]);
        expect(rows.map((row) => row.pairsPerTask)).toEqual([99, 149, 193]);
        // Each row is the boundary: one pair fewer does not reach α / tasks.
        for (const row of rows) {
            expect(upperNullPValue(row.pairsPerTask, 0, 0, MARGIN)).toBeLessThan(row.perTestAlpha);
            expect(upperNullPValue(row.pairsPerTask - 1, 0, 0, MARGIN)).toBeGreaterThanOrEqual(row.perTestAlpha);
        }
    });
});
