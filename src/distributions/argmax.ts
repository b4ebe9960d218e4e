/** Index of the largest value; the lowest index wins ties, so greedy decoding is deterministic. */
export function argmax(values: ArrayLike<number>, length: number = values.length): number {
    let best = 0;
    let bestValue = values[0];
    for (let index = 1; index < length; index++) {
        if (values[index] > bestValue) {
            bestValue = values[index];
            best = index;
        }
    }
    return best;
}
