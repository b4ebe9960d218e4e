/**
 * Numerically stable softmax into `out` (allocated when not given): subtract the maximum finite
 * logit before exponentiating, so logits of ±1e300 neither overflow nor lose the winner. -Infinity
 * entries (masks) get probability 0. Returns the output row.
 */
export function softmax(logits: ArrayLike<number>, out: Float64Array = new Float64Array(logits.length), temperature = 1): Float64Array {
    const length = logits.length;
    let max = -Infinity;
    for (let index = 0; index < length; index++) if (logits[index] > max) max = logits[index];
    if (max === -Infinity) throw new RangeError("softmax of a row where every logit is -Infinity");
    let sum = 0;
    for (let index = 0; index < length; index++) {
        // (x − max) can overflow to −Infinity for huge opposite logits; exp(−Infinity) = 0 is right.
        const value = Math.exp((logits[index] - max) / temperature);
        out[index] = value;
        sum += value;
    }
    for (let index = 0; index < length; index++) out[index] /= sum;
    return out;
}

/** log Σ exp(x) computed stably; -Infinity for an all-masked row. */
export function logSumExp(logits: ArrayLike<number>): number {
    let max = -Infinity;
    for (let index = 0; index < logits.length; index++) if (logits[index] > max) max = logits[index];
    if (max === -Infinity) return -Infinity;
    let sum = 0;
    for (let index = 0; index < logits.length; index++) sum += Math.exp(logits[index] - max);
    return max + Math.log(sum);
}
