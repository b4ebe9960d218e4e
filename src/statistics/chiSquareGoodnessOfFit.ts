import chisquareCdf from "@stdlib/stats-base-dists-chisquare-cdf";

export interface ChiSquareResult {
    statistic: number;
    degreesOfFreedom: number;
    pValue: number;
    /** Bins actually compared after pooling the small-expectation tail. */
    bins: number;
}

/**
 * Pearson χ² goodness of fit of observed counts against expected probabilities.
 * Bins whose expected count is below `minimumExpected` (default 5, the textbook validity rule) are
 * pooled into one bin; a count observed where the expected probability is exactly 0 makes the
 * statistic infinite (p = 0) — a policy emitting an impossible token must fail loudly.
 */
export function chiSquareGoodnessOfFit(
    observed: ArrayLike<number>,
    expectedProbabilities: ArrayLike<number>,
    minimumExpected = 5
): ChiSquareResult {
    let total = 0;
    for (let index = 0; index < observed.length; index++) total += observed[index];
    let statistic = 0;
    let bins = 0;
    let pooledObserved = 0;
    let pooledExpected = 0;
    for (let index = 0; index < observed.length; index++) {
        const expected = expectedProbabilities[index] * total;
        if (expected === 0) {
            if (observed[index] > 0) return {statistic: Infinity, degreesOfFreedom: Math.max(1, bins), pValue: 0, bins};
            continue;
        }
        if (expected < minimumExpected) {
            pooledObserved += observed[index];
            pooledExpected += expected;
            continue;
        }
        statistic += (observed[index] - expected) ** 2 / expected;
        bins++;
    }
    if (pooledExpected > 0) {
        statistic += (pooledObserved - pooledExpected) ** 2 / pooledExpected;
        bins++;
    }
    const degreesOfFreedom = Math.max(1, bins - 1);
    return {statistic, degreesOfFreedom, pValue: 1 - chisquareCdf(statistic, degreesOfFreedom), bins};
}
