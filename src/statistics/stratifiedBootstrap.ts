import {InvalidInputError} from "../errors.js";
import {Random} from "../random/Random.js";

export interface BootstrapOptions {
    readonly seed: number;
    /** Resamples drawn; default 2000. */
    readonly resamples?: number;
    /** Two-sided coverage of the percentile interval; default 0.95. */
    readonly confidence?: number;
}

export interface BootstrapInterval {
    /** The statistic on the data as given. */
    readonly estimate: number;
    readonly low: number;
    readonly high: number;
    readonly confidence: number;
    /** Resamples whose statistic was a number (NaN results are left out). */
    readonly resamples: number;
}

/**
 * Percentile bootstrap interval of `statistic`, resampling with replacement within each stratum
 * (each keeps its size), so a statistic over groups — one stratum per group — sees every group in
 * every resample. Deterministic for a seed: draws come from src/random/Random.ts. Quantiles
 * interpolate linearly between order statistics (Hyndman–Fan type 7).
 */
export function stratifiedBootstrap<T>(
    strata: readonly (readonly T[])[],
    statistic: (strata: readonly (readonly T[])[]) => number,
    options: BootstrapOptions
): BootstrapInterval {
    const resamples = options.resamples ?? 2000;
    const confidence = options.confidence ?? 0.95;
    if (!Number.isInteger(resamples) || resamples < 1)
        throw new InvalidInputError(`must be a positive integer, got ${resamples}`, "resamples");
    if (!(confidence > 0 && confidence < 1)) throw new InvalidInputError(`must be in (0, 1), got ${confidence}`, "confidence");
    strata.forEach((stratum, index) => {
        if (stratum.length === 0) throw new InvalidInputError("is empty; every stratum needs an observation", `strata.${index}`);
    });
    const random = new Random(options.seed);
    const values: number[] = [];
    for (let resample = 0; resample < resamples; resample++) {
        const drawn = strata.map((stratum) =>
            Array.from({length: stratum.length}, () => stratum[Math.floor(random.nextDouble() * stratum.length)])
        );
        const value = statistic(drawn);
        if (!Number.isNaN(value)) values.push(value);
    }
    values.sort((a, b) => a - b);
    const tail = (1 - confidence) / 2;
    return {
        estimate: statistic(strata),
        low: quantile(values, tail),
        high: quantile(values, 1 - tail),
        confidence,
        resamples: values.length
    };
}

function quantile(sorted: readonly number[], probability: number): number {
    if (sorted.length === 0) return NaN;
    const position = probability * (sorted.length - 1);
    const below = Math.floor(position);
    const above = Math.min(below + 1, sorted.length - 1);
    const weight = position - below;
    // Avoid Infinity·0 = NaN when an order statistic is infinite.
    return weight === 0 ? sorted[below] : sorted[below] + weight * (sorted[above] - sorted[below]);
}
