import normalQuantile from "@stdlib/stats-base-dists-normal-quantile";

import {InvalidInputError} from "../errors.js";
import {pairedScoreEquivalence} from "./pairedScoreEquivalence.js";
import {tangoScore} from "./tangoScore.js";

/** Pairs a paired table would need, at its observed rates, for the test to decide either way. */
export interface PairsToDecide {
    /** Pairs at which a table with these discordance rates is shown equivalent; null when |d̂| ≥ margin. */
    readonly equivalence: number | null;
    /** Pairs at which the same rates show a difference (the 1 − 2α score interval excludes 0); null when d̂ = 0. */
    readonly difference: number | null;
    /** The fewer of the two: the pairs needed to decide at the observed discordance. */
    readonly decide: number | null;
    /** The per-test level used: α over the Holm family, the strictest step. */
    readonly alpha: number;
}

// Above this many pairs the exact test is not searched; the asymptotic score test's count is reported.
const EXACT_SEARCH_LIMIT = 5000;

/**
 * How many pairs a task would need to be decided if its discordance rates (b/n, c/n) held: the
 * fewest pairs at which the exact score test shows equivalence at ±margin, and the fewest at which
 * Tango's score at δ = 0 shows a difference, both at level α (pass α / family size for Holm's
 * strictest step). The equivalence count starts from the asymptotic score test, whose statistic
 * grows as √n at fixed rates, and is then searched with the exact test on the scaled table up to
 * EXACT_SEARCH_LIMIT pairs. A planning figure, not a promise: the rates observed are estimates.
 */
export function pairsToDecide(
    pairs: number,
    targetOnlyPass: number,
    speculativeOnlyPass: number,
    margin: number,
    alpha: number
): PairsToDecide {
    if (!(Number.isInteger(pairs) && pairs >= 1)) throw new InvalidInputError(`must be a positive integer, got ${pairs}`, "pairs");
    const z = normalQuantile(1 - alpha, 0, 1);
    const difference = speculativeOnlyPass - targetOnlyPass;
    const differencePairs =
        difference === 0 ? null : Math.floor(pairs * (z / Math.abs(tangoScore(pairs, targetOnlyPass, speculativeOnlyPass, 0))) ** 2) + 1;
    const equivalencePairs =
        Math.abs(difference) >= margin * pairs ? null : equivalenceSearch(pairs, targetOnlyPass, speculativeOnlyPass, margin, alpha, z);
    const candidates = [equivalencePairs, differencePairs].filter((value): value is number => value !== null);
    return {
        equivalence: equivalencePairs,
        difference: differencePairs,
        decide: candidates.length === 0 ? null : Math.min(...candidates),
        alpha
    };
}

function equivalenceSearch(pairs: number, b: number, c: number, margin: number, alpha: number, z: number): number {
    // Per-pair scores at ±margin: Z(n') = √n' · slope at fixed rates.
    const slopeUpper = tangoScore(pairs, b, c, margin) / Math.sqrt(pairs);
    const slopeLower = tangoScore(pairs, b, c, -margin) / Math.sqrt(pairs);
    const asymptotic = Math.ceil(Math.max((z / slopeUpper) ** 2, (z / slopeLower) ** 2));
    if (asymptotic > EXACT_SEARCH_LIMIT) return asymptotic;
    const passes = (size: number) =>
        pairedScoreEquivalence(
            {
                bothPass: size - ((b + c) * size) / pairs,
                targetOnlyPass: (b * size) / pairs,
                speculativeOnlyPass: (c * size) / pairs,
                bothFail: 0
            },
            margin,
            alpha
        ).equivalent;
    let high = Math.max(asymptotic, pairs + 1);
    while (!passes(high)) {
        if (high > EXACT_SEARCH_LIMIT) return high;
        high = Math.ceil(high * 1.1);
    }
    let low = pairs;
    while (high - low > 1) {
        const middle = Math.floor((low + high) / 2);
        if (passes(middle)) high = middle;
        else low = middle;
    }
    return high;
}
