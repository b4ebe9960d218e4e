import {InvalidInputError} from "../errors.js";

/**
 * Tango's score statistic for H0: π_c − π_b = δ on a paired 2×2 table with n pairs, b pairs that
 * pass only the first arm (target-only) and c pairs that pass only the second (speculative):
 *
 *     Z(δ) = (c − b − nδ) / √(n(2π̃_b + δ(1 − δ)))
 *
 * where π̃_b is the maximum-likelihood estimate of π_b restricted to π_c − π_b = δ, the positive
 * root of 2n·x² + (−b − c + (2n + b − c)δ)·x − bδ(1 − δ) = 0 (Tango 1998, "Equivalence test and
 * confidence interval for the difference in proportions for the paired-sample design", Statistics in
 * Medicine 17:891–908, eq. 3; the same statistic as Nam 1997, Biometrics 53:1422–1430). The
 * variance is estimated under the null, not from the data, so the statistic is finite at
 * b = c = 0, where it equals −nδ / √(nδ(1 − δ)) for δ > 0.
 */
export function tangoScore(pairs: number, targetOnlyPass: number, speculativeOnlyPass: number, delta: number): number {
    const n = pairs;
    const b = targetOnlyPass;
    const c = speculativeOnlyPass;
    const quadratic = 2 * n;
    const linear = -b - c + (2 * n + b - c) * delta;
    const constant = -b * delta * (1 - delta);
    // constant ≤ 0 for |δ| < 1, so the discriminant is at least linear² and the root is real.
    const discriminant = Math.max(0, linear * linear - 4 * quadratic * constant);
    const restrictedTargetOnly = Math.max(0, (-linear + Math.sqrt(discriminant)) / (2 * quadratic));
    const variance = n * (2 * restrictedTargetOnly + delta * (1 - delta));
    const numerator = c - b - n * delta;
    if (!(variance > 0)) {
        // Only reachable at δ = 0 with no discordant pair: no evidence either way.
        return numerator === 0 ? 0 : numerator * Infinity;
    }
    return numerator / Math.sqrt(variance);
}

/** Checks that (n, b, c) is a paired table's pair count and discordant counts. */
export function checkDiscordantCounts(pairs: number, targetOnlyPass: number, speculativeOnlyPass: number): void {
    if (!Number.isInteger(pairs) || pairs < 1) {
        throw new InvalidInputError(`must be a positive integer, got ${pairs}`, "pairs");
    }
    for (const [field, value] of [
        ["targetOnlyPass", targetOnlyPass],
        ["speculativeOnlyPass", speculativeOnlyPass]
    ] as const) {
        if (!Number.isInteger(value) || value < 0) {
            throw new InvalidInputError(`must be a non-negative integer, got ${value}`, field);
        }
    }
    if (targetOnlyPass + speculativeOnlyPass > pairs) {
        throw new InvalidInputError(`${targetOnlyPass + speculativeOnlyPass} discordant pairs exceed ${pairs} pairs`, "table");
    }
}
