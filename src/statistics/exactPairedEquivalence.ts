import betaQuantile from "@stdlib/stats-base-dists-beta-quantile";
import binomialCdf from "@stdlib/stats-base-dists-binomial-cdf";

import {checkMarginAndAlpha, type PairedTable, pairCount} from "./pairedTost.js";

/** Result of the exact paired equivalence test on the discordant pairs of a paired 2×2 table. */
export interface ExactPairedEquivalenceResult {
    readonly method: "exact-discordance-bounds";
    readonly pairs: number;
    /** b: prompts that pass target-only and fail speculatively. */
    readonly targetOnlyPass: number;
    /** c: prompts that fail target-only and pass speculatively. */
    readonly speculativeOnlyPass: number;
    /** Observed difference (c − b)/n, speculative minus target, in proportion units. */
    readonly difference: number;
    readonly margin: number;
    readonly alpha: number;
    /** p-value of H0: difference ≤ −margin, P(B ≤ b) with B ~ Binomial(n, margin). */
    readonly pLower: number;
    /** p-value of H0: difference ≥ +margin, P(C ≤ c) with C ~ Binomial(n, margin). */
    readonly pUpper: number;
    /** The larger one-sided p-value: the equivalence p-value. */
    readonly p: number;
    /**
     * Exact 1 − 2α interval of the difference, [−U_b, U_c], where U_b and U_c are the one-sided
     * 1 − α Clopper–Pearson upper bounds of the two discordance rates.
     */
    readonly confidenceInterval: {readonly lower: number; readonly upper: number; readonly level: number};
    /** Both one-sided tests reject at α. */
    readonly equivalent: boolean;
    /** (1 − margin)^n: the p-value of a table with no discordant pair, the smallest any table of n pairs can give. */
    readonly minimumAttainableP: number;
    /** Even a table with no discordant pair could not reject at α: n is too small for this margin. */
    readonly underpowered: boolean;
}

/**
 * Exact paired equivalence test for two binary outcomes measured on the same prompts.
 *
 * With π_b and π_c the probabilities of the two discordant cells, the difference of the arms'
 * pass rates is d = π_c − π_b, so −π_b ≤ d ≤ π_c. Each one-sided null therefore implies a bound on
 * one discordance rate alone: d ≥ Δ implies π_c ≥ Δ, and d ≤ −Δ implies π_b ≥ Δ. The count c is
 * Binomial(n, π_c) whatever π_b is, and P(C ≤ c) falls as π_c grows, so P(C ≤ c | n, Δ) is an
 * exact p-value for H0: d ≥ Δ with no nuisance parameter left (likewise b for d ≤ −Δ).
 * Equivalently, equivalence is declared iff the exact one-sided Clopper–Pearson (1934) upper
 * bounds of both discordance rates lie below Δ.
 *
 * This is a sufficient condition for |d| < Δ, not a test of it: it ignores that discordance in one
 * direction offsets the other, so symmetric noise is never shown equivalent (3 flips each way out
 * of 200 pairs: p = 0.147). TAIS uses pairedScoreEquivalence; this test is kept to compare power
 * against (pairedEquivalencePower).
 */
export function exactPairedEquivalence(table: PairedTable, margin: number, alpha = 0.05): ExactPairedEquivalenceResult {
    checkMarginAndAlpha(margin, alpha);
    const pairs = pairCount(table);
    const b = table.targetOnlyPass;
    const c = table.speculativeOnlyPass;
    const pLower = binomialCdf(b, pairs, margin);
    const pUpper = binomialCdf(c, pairs, margin);
    const minimumAttainableP = (1 - margin) ** pairs;
    return {
        method: "exact-discordance-bounds",
        pairs,
        targetOnlyPass: b,
        speculativeOnlyPass: c,
        difference: (c - b) / pairs,
        margin,
        alpha,
        pLower,
        pUpper,
        p: Math.max(pLower, pUpper),
        confidenceInterval: {
            lower: -clopperPearsonUpper(b, pairs, alpha),
            upper: clopperPearsonUpper(c, pairs, alpha),
            level: 1 - 2 * alpha
        },
        equivalent: pLower < alpha && pUpper < alpha,
        minimumAttainableP,
        underpowered: !(minimumAttainableP < alpha)
    };
}

/**
 * One-sided 1 − α Clopper–Pearson upper bound of a binomial rate: the π with P(X ≤ x | n, π) = α
 * (1 when x = n), which is the 1 − α quantile of Beta(x + 1, n − x).
 */
export function clopperPearsonUpper(successes: number, total: number, alpha: number): number {
    if (successes >= total) return 1;
    return betaQuantile(1 - alpha, successes + 1, total - successes);
}
