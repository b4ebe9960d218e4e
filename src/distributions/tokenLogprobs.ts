/** One emitted token's log-probability and the most likely alternatives at its position. */
export interface TokenLogprob {
    readonly token: number;
    readonly logprob: number;
    /** The `top` most likely ids at this position, most likely first (ties: lower id first). */
    readonly top: ReadonlyArray<{readonly token: number; readonly logprob: number}>;
}

/**
 * log-softmax of a raw logit row at `token`, with its `top` most likely ids: the model's own
 * distribution at temperature 1, before any sampler or constraint, as vLLM reports logprobs by
 * default. −Infinity logits have probability 0 (logprob −Infinity).
 */
export function tokenLogprob(logits: Float64Array, token: number, top: number): TokenLogprob {
    let max = -Infinity;
    for (let id = 0; id < logits.length; id++) if (logits[id] > max) max = logits[id];
    let sum = 0;
    for (let id = 0; id < logits.length; id++) sum += Math.exp(logits[id] - max);
    const normaliser = max + Math.log(sum);
    return {
        token,
        logprob: logits[token] - normaliser,
        top: topIds(logits, top).map((id) => ({token: id, logprob: logits[id] - normaliser}))
    };
}

/** The `count` ids of largest value, largest first, lower id first on ties (one pass, a small sorted list). */
function topIds(row: Float64Array, count: number): number[] {
    const ids: number[] = [];
    if (count <= 0) return ids;
    for (let id = 0; id < row.length; id++) {
        const value = row[id];
        if (ids.length === count && value <= row[ids[count - 1]]) continue;
        let at = ids.length < count ? ids.length : count - 1;
        while (at > 0 && row[ids[at - 1]] < value) at--;
        ids.splice(at, 0, id);
        if (ids.length > count) ids.pop();
    }
    return ids;
}
