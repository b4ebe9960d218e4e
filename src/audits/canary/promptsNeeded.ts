import normalQuantile from "@stdlib/stats-base-dists-normal-quantile";

/** The upper end of the Wilson score interval for a proportion `rate` seen over `total` trials. */
export function wilsonUpper(rate: number, total: number, confidence = 0.95): number {
    const z = normalQuantile(1 - (1 - confidence) / 2, 0, 1);
    const zSquared = z * z;
    const denominator = 1 + zSquared / total;
    const centre = (rate + zSquared / (2 * total)) / denominator;
    const halfWidth = (z / denominator) * Math.sqrt((rate * (1 - rate)) / total + zSquared / (4 * total * total));
    return Math.min(1, centre + halfWidth);
}

/**
 * How many prompts a canary needs for its verdict to be able to pass: the fewest n whose 95% Wilson
 * upper bound on the mismatch rate falls below `threshold` when the rate stays at `observedRate`
 * (0 mismatches: n > z²(1 − t)/t, 253 prompts for 1.5%). Null when no number would do: the rate
 * seen is at or above the threshold.
 */
export function promptsNeeded(observedRate: number, threshold: number, confidence = 0.95): number | null {
    if (!(observedRate < threshold) || threshold <= 0) return null;
    const passes = (total: number): boolean => wilsonUpper(observedRate, total, confidence) < threshold;
    let high = 1;
    while (!passes(high)) {
        high *= 2;
        if (high > 2 ** 40) return null;
    }
    let low = Math.floor(high / 2);
    // passes(low) is false (or low is 0), passes(high) is true.
    while (high - low > 1) {
        const middle = Math.floor((low + high) / 2);
        if (passes(middle)) high = middle;
        else low = middle;
    }
    return high;
}
