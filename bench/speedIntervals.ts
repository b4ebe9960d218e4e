import {stratifiedBootstrap} from "../src/statistics/stratifiedBootstrap.js";

/**
 * 95% percentile-bootstrap intervals for the speed tables of the native and device benchmarks
 * (bench/nativeComparison.ts, bench/device/deviceBench.ts), seeded so a report is reproducible from
 * its JSON. Medians, not means: one repetition slowed by another process must not move a row.
 */

export interface SpeedInterval {
    readonly estimate: number;
    readonly low: number;
    readonly high: number;
}

const resamples = 2000;

/** The median of the finite values (NaN when there are none): the bench tables' statistic. */
export function median(values: readonly number[]): number {
    const sorted = values.filter((value) => Number.isFinite(value)).sort((a, b) => a - b);
    if (sorted.length === 0) return Number.NaN;
    const middle = sorted.length >> 1;
    return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

const unknown: SpeedInterval = {estimate: Number.NaN, low: Number.NaN, high: Number.NaN};

/** The median of per-repetition ratios (e.g. specgate / llama.cpp of one interleaved pair), resampling repetitions. */
export function medianInterval(values: readonly number[], seed = 1): SpeedInterval {
    const finite = values.filter((value) => Number.isFinite(value));
    if (finite.length === 0) return unknown;
    const interval = stratifiedBootstrap([finite], ([chosen]) => median(chosen), {seed, resamples});
    return {estimate: interval.estimate, low: interval.low, high: interval.high};
}

/**
 * median(numerator) / median(denominator) for two independent sets of repetitions (an arm's tok/s over
 * target-only's), resampling each set on its own.
 */
export function medianRatioInterval(numerator: readonly number[], denominator: readonly number[], seed = 1): SpeedInterval {
    const top = numerator.filter((value) => Number.isFinite(value));
    const bottom = denominator.filter((value) => Number.isFinite(value));
    if (top.length === 0 || bottom.length === 0) return unknown;
    const interval = stratifiedBootstrap([top, bottom], ([a, b]) => median(a) / median(b), {seed, resamples});
    return {estimate: interval.estimate, low: interval.low, high: interval.high};
}

/**
 * Whether an interval shows a ratio at or above `goal`: "met" when its lower end is, "missed" when its
 * upper end is below, "undecided" when it holds the goal; null without an interval.
 */
export function goalVerdict(interval: SpeedInterval, goal: number): "met" | "missed" | "undecided" | null {
    if (!Number.isFinite(interval.low)) return null;
    return interval.low >= goal ? "met" : interval.high < goal ? "missed" : "undecided";
}

/** "1.93 [1.81, 2.02]" (an interval of NaNs: "–"). */
export function formatInterval(interval: SpeedInterval, digits = 2, suffix = ""): string {
    if (!Number.isFinite(interval.estimate)) return "–";
    return `${interval.estimate.toFixed(digits)}${suffix} [${interval.low.toFixed(digits)}, ${interval.high.toFixed(digits)}]`;
}
