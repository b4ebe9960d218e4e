import binomialCdf from "@stdlib/stats-base-dists-binomial-cdf";
import normalCdf from "@stdlib/stats-base-dists-normal-cdf";
import normalQuantile from "@stdlib/stats-base-dists-normal-quantile";

import {InvalidInputError} from "../errors.js";
import {checkMarginAndAlpha, type PairedTable} from "./pairedTost.js";
import {tangoScore} from "./tangoScore.js";

/** Result of the exact unconditional score test of equivalence on a paired 2×2 table. */
export interface PairedScoreEquivalenceResult {
    readonly method: "exact-unconditional-score";
    readonly pairs: number;
    /** b: prompts that pass target-only and fail speculatively. */
    readonly targetOnlyPass: number;
    /** c: prompts that fail target-only and pass speculatively. */
    readonly speculativeOnlyPass: number;
    /** Observed difference d̂ = (c − b)/n, speculative minus target, in proportion units. */
    readonly difference: number;
    readonly margin: number;
    readonly alpha: number;
    /** Tango's score at δ = −margin (large values speak against H0: d ≤ −margin). */
    readonly scoreLower: number;
    /** Tango's score at δ = +margin (small values speak against H0: d ≥ +margin). */
    readonly scoreUpper: number;
    /** Exact unconditional p-value of H0: d ≤ −margin. */
    readonly pLower: number;
    /** Exact unconditional p-value of H0: d ≥ +margin. */
    readonly pUpper: number;
    /** The larger one-sided p-value: the equivalence p-value. */
    readonly p: number;
    /** The same two one-sided tests with Tango's normal approximation instead of the exact tail (for reference). */
    readonly asymptoticP: number;
    /**
     * Two-sided p-value of H0: d = 0 from Tango's score at δ = 0, (c − b)/√(b + c) (McNemar's statistic
     * without continuity correction; 1 when b = c = 0). It is below 2α exactly when the 1 − 2α score
     * interval excludes 0.
     */
    readonly differenceP: number;
    /** Tango's asymptotic 1 − 2α score interval for d (defined at b = c = 0, unlike the Wald interval). */
    readonly scoreInterval: {readonly lower: number; readonly upper: number; readonly level: number};
    /** Both one-sided tests reject at α. */
    readonly equivalent: boolean;
    /** The fewest pairs at which a table with no discordant pair reaches p < α: minimumPairsForEquivalence(margin, α). */
    readonly minimumPairs: number;
    /** pairs < minimumPairs: not even a table with no discordant pair could reject at α. */
    readonly underpowered: boolean;
}

/**
 * Exact unconditional test of equivalence, |π_c − π_b| < Δ, for two binary outcomes measured on the
 * same prompts, ordered by Tango's score statistic (tangoScore).
 *
 * Each one-sided null, e.g. H0+: d = π_c − π_b ≥ Δ, leaves one nuisance parameter, the discordance
 * rate ψ = π_b + π_c ∈ [Δ, 1]. The p-value is the largest probability, over ψ, that a table drawn
 * under d = Δ has a score at or below the observed one:
 *
 *     p+ = sup_ψ P_{Δ,ψ}(Z(B, C) ≤ Z(b, c)),
 *
 * the exact unconditional construction of Suissa & Shuster (1985) with the score ordering used for
 * matched pairs by Sidik (2003, "Exact unconditional tests for testing non-inferiority in
 * matched-pairs design", Statistics in Medicine 22:265–278). Taking the supremum over the nuisance
 * parameter makes the size at most α at every ψ and every n, which the asymptotic score test is not
 * (at ψ = Δ all discordance runs one way and Tango's normal approximation rejects too often). The
 * probability is computed exactly, conditioning on the number of discordant pairs D ~ Bin(n, ψ), under
 * which C ~ Bin(D, (ψ + Δ)/(2ψ)); the supremum is taken over a grid of ψ refined around its maximum.
 *
 * Unlike bounding each discordance rate separately (exactPairedEquivalence), the score statistic
 * uses both discordant counts, so noise that flips outcomes both ways with no net difference is
 * recognised as equivalent: 3 flips each way out of 200 pairs gives p ≈ 0.03 at Δ = 3pp. The test
 * is defined at b = c = 0 (the variance is estimated under the null), where it passes from
 * minimumPairsForEquivalence pairs on.
 *
 * The table may hold per-prompt fractions instead of counts: with several seeds of one prompt, each
 * prompt adds the share of its seeds that fell in each cell (promptLevelTable), so n counts prompts,
 * the independent units. With perfectly correlated seeds the fractions are 0 or 1 and this is the
 * exact test on prompts; with partly correlated seeds the sums vary less than binomial counts, and
 * the simulated size stays below α (pairedScoreEquivalence.clustered.test.ts).
 */
export function pairedScoreEquivalence(table: PairedTable, margin: number, alpha = 0.05): PairedScoreEquivalenceResult {
    checkMarginAndAlpha(margin, alpha);
    const pairs = promptPairCount(table);
    const b = table.targetOnlyPass;
    const c = table.speculativeOnlyPass;
    const pUpper = upperNullPValue(pairs, b, c, margin);
    const pLower = upperNullPValue(pairs, c, b, margin);
    const scoreUpper = tangoScore(pairs, b, c, margin);
    const scoreLower = tangoScore(pairs, b, c, -margin);
    const minimumPairs = minimumPairsForEquivalence(margin, alpha);
    return {
        method: "exact-unconditional-score",
        pairs,
        targetOnlyPass: b,
        speculativeOnlyPass: c,
        difference: (c - b) / pairs,
        margin,
        alpha,
        scoreLower,
        scoreUpper,
        pLower,
        pUpper,
        p: Math.max(pLower, pUpper),
        asymptoticP: Math.max(normalCdf(scoreUpper, 0, 1), 1 - normalCdf(scoreLower, 0, 1)),
        differenceP: pairedDifferenceP(pairs, b, c),
        scoreInterval: tangoScoreInterval(pairs, b, c, alpha),
        equivalent: pLower < alpha && pUpper < alpha,
        minimumPairs,
        underpowered: pairs < minimumPairs
    };
}

/** Two-sided p-value of H0: d = 0 from Tango's score at δ = 0; 1 when there is no discordance. */
export function pairedDifferenceP(pairs: number, targetOnlyPass: number, speculativeOnlyPass: number): number {
    const score = tangoScore(pairs, targetOnlyPass, speculativeOnlyPass, 0);
    return Math.min(1, 2 * (1 - normalCdf(Math.abs(score), 0, 1)));
}

/**
 * The number of pairs of a table whose cells are counts or sums of per-prompt fractions: every cell
 * finite and non-negative, and the cells adding up to a whole number of prompts (at least one).
 */
export function promptPairCount(table: PairedTable): number {
    for (const [field, value] of Object.entries(table)) {
        if (!(typeof value === "number" && Number.isFinite(value) && value >= 0)) {
            throw new InvalidInputError(`must be a non-negative number, got ${String(value)}`, `table.${field}`);
        }
    }
    const total = table.bothPass + table.targetOnlyPass + table.speculativeOnlyPass + table.bothFail;
    const pairs = Math.round(total);
    if (pairs < 1 || Math.abs(total - pairs) > 1e-6 * Math.max(1, total)) {
        throw new InvalidInputError(`must add up to a whole number of pairs (at least one), got ${total}`, "table");
    }
    return pairs;
}

// Relative tolerance for "a score at or below the observed one": ties must count, rounding must not split them.
const SCORE_TIE_TOLERANCE = 1e-9;

/**
 * p-value of H0+: d ≥ margin for the table (n, b, c): the supremum over the nuisance ψ of
 * P(Z(B, C) ≤ Z(b, c)) under d = margin. The lower null's p-value is this with b and c swapped,
 * since Tango's score at −δ on (b, c) is minus the score at +δ on (c, b).
 */
export function upperNullPValue(pairs: number, targetOnlyPass: number, speculativeOnlyPass: number, margin: number): number {
    const observed = tangoScore(pairs, targetOnlyPass, speculativeOnlyPass, margin);
    const thresholds = upperTailThresholds(pairs, margin, observed + SCORE_TIE_TOLERANCE * Math.max(1, Math.abs(observed)));
    return Math.min(1, supremumOverNuisance(pairs, margin, thresholds));
}

/**
 * For every number of discordant pairs D = 0…n, the largest c with Z(D − c, c) ≤ score at δ = margin
 * (−1 when none). The score rises with c at fixed D (c − b grows and the restricted variance is
 * bounded), so the tables at or below the score are exactly c ≤ threshold(D): a binary search.
 */
export function upperTailThresholds(pairs: number, margin: number, score: number): Int32Array {
    const thresholds = new Int32Array(pairs + 1);
    for (let discordant = 0; discordant <= pairs; discordant++) {
        let low = -1;
        let high = discordant;
        while (low < high) {
            const middle = Math.floor((low + high + 1) / 2);
            if (tangoScore(pairs, discordant - middle, middle, margin) <= score) low = middle;
            else high = middle - 1;
        }
        thresholds[discordant] = low;
    }
    return thresholds;
}

/**
 * P(C ≤ threshold(D)) for a table drawn with discordance rate ψ and difference d = margin:
 * Σ_D P(D) · P(C ≤ threshold(D) | D), D ~ Bin(n, ψ), C | D ~ Bin(D, (ψ + margin)/(2ψ)).
 */
export function upperTailProbability(pairs: number, margin: number, discordance: number, thresholds: Int32Array): number {
    const speculativeShare = Math.min(1, (discordance + margin) / (2 * discordance));
    const window = binomialPmfWindow(pairs, discordance);
    let total = 0;
    window.values.forEach((weight, offset) => {
        const discordant = window.start + offset;
        const limit = thresholds[discordant];
        if (limit < 0) return;
        total += limit >= discordant ? weight : weight * binomialCdf(limit, discordant, speculativeShare);
    });
    return total;
}

// Grid of the nuisance ψ on [margin, 1], dense at both ends: near margin all discordance runs one
// way; near 1 every pair is discordant, where the supremum of a no-discordance table lies.
const GRID_POINTS = 96;
const REFINEMENTS = 2;
const REFINE_POINTS = 8;

/**
 * The supremum over ψ ∈ [margin, 1] of upperTailProbability: a Chebyshev-spaced grid, then twice a
 * finer grid between the neighbours of the best point so far.
 */
function supremumOverNuisance(pairs: number, margin: number, thresholds: Int32Array): number {
    const at = (discordance: number) => upperTailProbability(pairs, margin, discordance, thresholds);
    let grid = Array.from(
        {length: GRID_POINTS + 1},
        (_, index) => margin + ((1 - margin) * (1 - Math.cos((Math.PI * index) / GRID_POINTS))) / 2
    );
    let values = grid.map(at);
    let supremum = 0;
    for (let round = 0; ; round++) {
        const best = values.reduce((bestIndex, value, index) => (value > values[bestIndex] ? index : bestIndex), 0);
        supremum = Math.max(supremum, values[best]);
        if (round === REFINEMENTS) return supremum;
        const low = grid[Math.max(0, best - 1)];
        const high = grid[Math.min(grid.length - 1, best + 1)];
        grid = Array.from({length: REFINE_POINTS + 1}, (_, index) => low + ((high - low) * index) / REFINE_POINTS);
        values = grid.map(at);
    }
}

/**
 * The Bin(n, p) probabilities that matter (relative to the mode, above 1e-18), by the ratio
 * recurrence from the mode outward and normalised, so no factorial or Gamma function is needed.
 */
export function binomialPmfWindow(trials: number, probability: number): {start: number; values: Float64Array} {
    if (probability <= 0) return {start: 0, values: Float64Array.of(1)};
    if (probability >= 1) return {start: trials, values: Float64Array.of(1)};
    const mode = Math.min(trials, Math.floor((trials + 1) * probability));
    const odds = probability / (1 - probability);
    const above: number[] = [];
    for (let k = mode, value = 1; k < trials; k++) {
        value *= ((trials - k) / (k + 1)) * odds;
        if (value < 1e-18) break;
        above.push(value);
    }
    const below: number[] = [];
    for (let k = mode, value = 1; k > 0; k--) {
        value *= k / ((trials - k + 1) * odds);
        if (value < 1e-18) break;
        below.push(value);
    }
    const values = Float64Array.from([...below.reverse(), 1, ...above]);
    const sum = values.reduce((total, value) => total + value, 0);
    return {start: mode - below.length, values: values.map((value) => value / sum)};
}

/**
 * Tango's asymptotic 1 − 2α score interval for d: the δ where the score crosses ±z_{1−α}, found
 * by bisection (the score falls as δ rises). Defined for every table, b = c = 0 included.
 */
export function tangoScoreInterval(
    pairs: number,
    targetOnlyPass: number,
    speculativeOnlyPass: number,
    alpha: number
): {lower: number; upper: number; level: number} {
    const z = normalQuantile(1 - alpha, 0, 1);
    const crossing = (target: number): number => {
        let low = -1 + 1e-12;
        let high = 1 - 1e-12;
        for (let iteration = 0; iteration < 60; iteration++) {
            const middle = (low + high) / 2;
            if (tangoScore(pairs, targetOnlyPass, speculativeOnlyPass, middle) > target) low = middle;
            else high = middle;
        }
        return (low + high) / 2;
    };
    return {lower: crossing(z), upper: crossing(-z), level: 1 - 2 * alpha};
}

const minimumPairsCache = new Map<string, number>();

/**
 * The fewest pairs n at which a table with no discordant pair (byte-identical arms) is shown
 * equivalent at ±margin and level α: the smallest n with p(n; b = c = 0) < α. Pass α/m for a task
 * among m that Holm adjusts together, all without a discordant pair (holmPairsTable).
 * (1 − margin)^n is the tail at ψ = margin, so n ≥ ln α / ln(1 − margin) is needed; the search
 * gallops up from there, then bisects.
 */
export function minimumPairsForEquivalence(margin: number, alpha: number): number {
    checkMarginAndAlpha(margin, Math.min(alpha, 0.49));
    const key = `${margin}/${alpha}`;
    const cached = minimumPairsCache.get(key);
    if (cached !== undefined) return cached;
    const passes = (pairs: number) => upperNullPValue(pairs, 0, 0, margin) < alpha;
    let low = Math.max(1, Math.ceil(Math.log(alpha) / Math.log(1 - margin)) - 1);
    let step = 1;
    let high = low;
    while (!passes(high)) {
        low = high;
        high += step;
        step *= 2;
    }
    while (high - low > 1) {
        const middle = Math.floor((low + high) / 2);
        if (passes(middle)) high = middle;
        else low = middle;
    }
    const result = passes(low) ? low : high;
    minimumPairsCache.set(key, result);
    return result;
}

/** One row of holmPairsTable: with `tasks` tasks in one Holm family, the pairs each needs. */
export interface HolmPairsRow {
    readonly tasks: number;
    /** α / tasks: the first Holm step, which every task must pass when none has a discordant pair. */
    readonly perTestAlpha: number;
    readonly pairsPerTask: number;
}

/**
 * Pairs per task needed for byte-identical arms to be shown equivalent when `tasks` tasks share a
 * Holm family: every task has the same p-value, so Holm multiplies each by the number of tasks, and
 * each must reach p < α / tasks.
 */
export function holmPairsTable(margin: number, alpha: number, taskCounts: readonly number[]): HolmPairsRow[] {
    return taskCounts.map((tasks) => {
        if (!Number.isInteger(tasks) || tasks < 1) throw new InvalidInputError(`must be a positive integer, got ${tasks}`, "tasks");
        return {tasks, perTestAlpha: alpha / tasks, pairsPerTask: minimumPairsForEquivalence(margin, alpha / tasks)};
    });
}

/**
 * The rejection region of H0+ at level α for n pairs: for each D, the largest c that rejects (−1
 * for none): the region {Z ≤ z*} with z* = criticalUpperScore. Used to compute size and power exactly.
 */
export function upperRejectionThresholds(pairs: number, margin: number, alpha: number): Int32Array {
    const critical = criticalUpperScore(pairs, margin, alpha);
    return critical === null ? new Int32Array(pairs + 1).fill(-1) : upperTailThresholds(pairs, margin, critical);
}

/**
 * The largest score at δ = margin that still rejects H0+: d ≥ margin at level α for n pairs (null
 * when no table of n pairs rejects): the test declares equivalence iff Z(b, c; margin) ≤ z* and
 * −Z(c, b; margin) ≤ z*. The p-value rises with the observed score, so z* is found by bisection
 * until no attainable score of n pairs can lie between the bounds.
 */
export function criticalUpperScore(pairs: number, margin: number, alpha: number): number | null {
    checkMarginAndAlpha(margin, alpha);
    const pAt = (score: number) => supremumOverNuisance(pairs, margin, upperTailThresholds(pairs, margin, score));
    // The critical score is near the normal quantile; widen the bracket until it holds it.
    const normal = normalQuantile(alpha, 0, 1);
    let low = normal - 0.5;
    let high = normal + 0.5;
    const lowest = tangoScore(pairs, pairs, 0, margin);
    while (low > lowest && !(pAt(low) < alpha)) low -= 1;
    if (!(pAt(low) < alpha)) return null;
    while (pAt(high) < alpha) high += 1;
    // Attainable scores of n pairs differ by more than 1e-7.
    while (high - low > 1e-7) {
        const middle = (low + high) / 2;
        if (pAt(middle) < alpha) low = middle;
        else high = middle;
    }
    return low;
}
