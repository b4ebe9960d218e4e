import binomialCdf from "@stdlib/stats-base-dists-binomial-cdf";

import {InvalidInputError} from "../errors.js";
import {binomialPmfWindow, upperRejectionThresholds} from "./pairedScoreEquivalence.js";

/** The paired equivalence tests whose operating characteristics can be computed. */
export type PairedEquivalenceMethod = "exact-unconditional-score" | "exact-discordance-bounds";

/**
 * For each number of discordant pairs D, the largest c (speculative-only passes) that rejects
 * H0+: d ≥ margin; both tests are symmetric, so H0−: d ≤ −margin is rejected where b ≤ the same
 * value. The discordance-bounds test rejects H0+ iff P(C ≤ c | n, margin) < α, a fixed c limit.
 */
export function pairedRejectionThresholds(method: PairedEquivalenceMethod, pairs: number, margin: number, alpha: number): Int32Array {
    if (method === "exact-unconditional-score") return upperRejectionThresholds(pairs, margin, alpha);
    let limit = -1;
    while (limit + 1 <= pairs && binomialCdf(limit + 1, pairs, margin) < alpha) limit++;
    return Int32Array.from({length: pairs + 1}, (_, discordant) => Math.min(limit, discordant));
}

/**
 * Probability that the two one-sided tests both reject, i.e. that equivalence is declared, when
 * each prompt independently passes only target-only with probability targetOnlyRate (π_b) and only
 * speculatively with probability speculativeOnlyRate (π_c): exactly, as Σ_D P(D) · P(D − k(D) ≤ C ≤ k(D) | D)
 * with D ~ Bin(n, π_b + π_c) and C | D ~ Bin(D, π_c/(π_b + π_c)). At |π_c − π_b| = margin it is the
 * size; inside the margin, the power.
 */
export function equivalenceRejectionProbability(thresholds: Int32Array, targetOnlyRate: number, speculativeOnlyRate: number): number {
    const pairs = thresholds.length - 1;
    const discordance = targetOnlyRate + speculativeOnlyRate;
    if (!(targetOnlyRate >= 0 && speculativeOnlyRate >= 0 && discordance <= 1)) {
        throw new InvalidInputError(
            `must be non-negative rates summing to at most 1, got ${targetOnlyRate} and ${speculativeOnlyRate}`,
            "rates"
        );
    }
    const share = discordance === 0 ? 0.5 : speculativeOnlyRate / discordance;
    const window = binomialPmfWindow(pairs, discordance);
    let total = 0;
    window.values.forEach((weight, offset) => {
        const discordant = window.start + offset;
        const upper = thresholds[discordant];
        const lower = discordant - upper;
        if (upper < 0 || lower > upper) return;
        const below = lower > 0 ? binomialCdf(lower - 1, discordant, share) : 0;
        total += weight * (binomialCdf(upper, discordant, share) - below);
    });
    return total;
}
