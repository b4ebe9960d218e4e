import {InvalidDistributionError} from "../errors.js";
import {argmax} from "./argmax.js";
import {type SamplingOptions, defaultSamplingOptions} from "./SamplingOptions.js";
import {softmax} from "./softmax.js";

/**
 * Raw logits → the probability row the sampler draws from (temperature, top-k, top-p, min-p; see
 * SamplingOptions for the order). The result sums to 1 up to rounding and is 0 outside the kept set.
 * NaN and +Infinity logits are errors; -Infinity is a mask.
 */
export function processLogits(
    logits: ArrayLike<number>,
    options: SamplingOptions = defaultSamplingOptions,
    out: Float64Array = new Float64Array(logits.length),
    field = "logits"
): Float64Array {
    const length = logits.length;
    if (length === 0) throw new InvalidDistributionError("empty logit row", field);
    let finiteCount = 0;
    for (let index = 0; index < length; index++) {
        const value = logits[index];
        if (Number.isNaN(value) || value === Infinity) throw new InvalidDistributionError(`logit ${index} is ${value}`, field);
        if (value !== -Infinity) finiteCount++;
    }
    if (finiteCount === 0) throw new InvalidDistributionError("every logit is -Infinity: no token can be sampled", field);

    if (options.temperature === 0) {
        out.fill(0);
        out[argmax(logits)] = 1;
        return out;
    }
    softmax(logits, out, options.temperature);
    if (options.topK > 0 && options.topK < length) keepAtLeast(out, kthLargest(out, options.topK));
    if (options.topP < 1) keepAtLeast(out, topPThreshold(out, options.topP));
    if (options.minP > 0) {
        let max = 0;
        for (let index = 0; index < length; index++) if (out[index] > max) max = out[index];
        keepAtLeast(out, options.minP * max);
    }
    return out;
}

/** Zero every entry below `threshold` and renormalise the rest. */
function keepAtLeast(row: Float64Array, threshold: number): void {
    let sum = 0;
    for (let index = 0; index < row.length; index++) {
        if (row[index] < threshold) row[index] = 0;
        else sum += row[index];
    }
    // Division rather than multiplication by 1/sum: a single survivor becomes exactly 1.
    for (let index = 0; index < row.length; index++) row[index] /= sum;
}

function kthLargest(row: Float64Array, k: number): number {
    const sorted = Float64Array.from(row).sort();
    return sorted[sorted.length - k];
}

/**
 * Smallest probability in the nucleus: sort descending, keep the shortest prefix whose mass
 * reaches topP (the token that crosses topP is kept, as in HF/vLLM). Ties at the threshold are kept.
 */
function topPThreshold(row: Float64Array, topP: number): number {
    const sorted = Float64Array.from(row).sort();
    let cumulative = 0;
    for (let index = sorted.length - 1; index >= 0; index--) {
        cumulative += sorted[index];
        if (cumulative >= topP) return sorted[index];
    }
    return 0;
}
