import normalQuantile from "@stdlib/stats-base-dists-normal-quantile";

import {InvalidInputError} from "../errors.js";
import {pairedScoreEquivalence} from "./pairedScoreEquivalence.js";
import {tangoScore} from "./tangoScore.js";

/** Pairs a paired table (or samples per arm, unpaired) would need, at its observed rates, for the test to decide either way. */
export interface PairsToDecide {
    /** What the counts count: pairs of a paired table, or samples on each arm of unpaired counts. */
    readonly unit: "pairs" | "samples per arm";
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
        unit: "pairs",
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

/**
 * The unpaired counterpart of pairsToDecide: samples per arm at which the Wald TOST would show
 * equivalence at ±margin, and the Wald test of d = 0 a difference, if the observed pass rates held.
 * With v = p_t(1 − p_t) + p_s(1 − p_s) and z = z_{1−α}: equivalence needs z√(v/n) < margin − |d|,
 * a difference z√(v/n) < |d|. Null where the rates give no spread (both at 0 or both at 1).
 */
export function samplesPerArmToDecide(targetRate: number, speculativeRate: number, margin: number, alpha: number): PairsToDecide {
    const variance = targetRate * (1 - targetRate) + speculativeRate * (1 - speculativeRate);
    const z = normalQuantile(1 - alpha, 0, 1);
    const difference = Math.abs(speculativeRate - targetRate);
    const needed = (gap: number) => (variance > 0 && gap > 0 ? Math.floor((z * z * variance) / (gap * gap)) + 1 : null);
    const equivalence = difference < margin ? needed(margin - difference) : null;
    const shown = difference > 0 ? needed(difference) : null;
    const candidates = [equivalence, shown].filter((value): value is number => value !== null);
    return {
        unit: "samples per arm",
        equivalence,
        difference: shown,
        decide: candidates.length === 0 ? null : Math.min(...candidates),
        alpha
    };
}
