import binomialCdf from "@stdlib/stats-base-dists-binomial-cdf";

import {InvalidInputError} from "../errors.js";

/**
 * Exact two-sided McNemar test on the discordant counts of a paired 2×2 table: under H0 the
 * b + c discordant pairs split Binomial(b + c, 1/2), and the p-value doubles the smaller tail
 * (capped at 1). With no discordant pairs there is no evidence either way, so p = 1.
 */
export function mcnemarExact(targetOnlyPasses: number, speculativeOnlyPasses: number): number {
    checkCount(targetOnlyPasses, "targetOnlyPasses");
    checkCount(speculativeOnlyPasses, "speculativeOnlyPasses");
    const discordant = targetOnlyPasses + speculativeOnlyPasses;
    if (discordant === 0) {
        return 1;
    }
    const smaller = Math.min(targetOnlyPasses, speculativeOnlyPasses);
    return Math.min(1, 2 * binomialCdf(smaller, discordant, 0.5));
}

function checkCount(value: number, field: string): void {
    if (!Number.isInteger(value) || value < 0) {
        throw new InvalidInputError(`must be a non-negative integer, got ${value}`, field);
    }
}
