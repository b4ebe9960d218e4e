import binomialCdf from "@stdlib/stats-base-dists-binomial-cdf";

import {InvalidInputError} from "../errors.js";

/** A distribution-free interval for a median, with the confidence it actually has. */
export interface MedianInterval {
    readonly low: number;
    readonly high: number;
    /** The exact coverage of [low, high] for the median of any continuous distribution. */
    readonly confidence: number;
}

/**
 * The order-statistic interval for the median: [x_(k), x_(n+1−k)] covers it with probability
 * 1 − 2·P(Bin(n, ½) ≤ k − 1), whatever the distribution (the inversion of the sign test). The
 * narrowest such interval with at least `confidence` is returned; with too few values for that
 * (five or fewer for 95%) it is [lowest, highest], whose confidence 1 − 2^(1−n) is reported as it is:
 * 75% for 3 values, 94% for 5, 97% for 6.
 */
export function medianInterval(values: readonly number[], confidence = 0.95): MedianInterval {
    if (values.length === 0) throw new InvalidInputError("needs at least one value", "values");
    if (!(confidence > 0 && confidence < 1)) throw new InvalidInputError(`must lie in (0, 1), got ${confidence}`, "confidence");
    const sorted = [...values].sort((a, b) => a - b);
    const n = sorted.length;
    const coverage = (rank: number) => 1 - 2 * binomialCdf(rank - 1, n, 0.5);
    let rank = 1;
    while (rank + 1 <= Math.ceil(n / 2) && coverage(rank + 1) >= confidence) rank++;
    return {low: sorted[rank - 1], high: sorted[n - rank], confidence: Math.max(0, coverage(rank))};
}
