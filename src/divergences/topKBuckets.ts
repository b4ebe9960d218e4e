/**
 * The FSD "top-k" view of a pair of distributions: the target's k most likely ids, both
 * distributions gathered there, plus one "rest" bucket per distribution holding its remaining mass.
 * Any divergence applied to the k+1 bins is the top-k variant of that divergence.
 *
 * Writes into `targetOut` / `draftOut` (length ≥ k+1) and returns the number of bins used
 * (min(k, V) + 1). Selection is one pass with a small sorted buffer: O(V·log k) comparisons worst
 * case, no allocation proportional to V. Ties at the k-th value: the lowest ids win.
 */
export function topKBuckets(
    target: ArrayLike<number>,
    draft: ArrayLike<number>,
    k: number,
    targetOut: Float64Array,
    draftOut: Float64Array,
    idsScratch: Int32Array = new Int32Array(k)
): number {
    const length = target.length;
    const size = Math.min(k, length);
    let count = 0;
    // idsScratch[0..count) holds the selected ids sorted by descending target probability.
    for (let id = 0; id < length; id++) {
        const value = target[id];
        if (count === size && !(value > target[idsScratch[count - 1]])) continue;
        let position = count < size ? count++ : size - 1;
        while (position > 0 && value > target[idsScratch[position - 1]]) {
            idsScratch[position] = idsScratch[position - 1];
            position--;
        }
        idsScratch[position] = id;
    }
    let targetKept = 0;
    let draftKept = 0;
    let targetTotal = 0;
    let draftTotal = 0;
    for (let id = 0; id < length; id++) {
        targetTotal += target[id];
        draftTotal += draft[id];
    }
    for (let bin = 0; bin < size; bin++) {
        const id = idsScratch[bin];
        targetOut[bin] = target[id];
        draftOut[bin] = draft[id];
        targetKept += target[id];
        draftKept += draft[id];
    }
    // Rest mass; clamp tiny negative rounding to 0.
    targetOut[size] = Math.max(0, targetTotal - targetKept);
    draftOut[size] = Math.max(0, draftTotal - draftKept);
    return size + 1;
}
