/**
 * Splits `total` into integers proportional to `weights` (largest-remainder method; ties go to the
 * earlier weight), so the parts sum to `total` exactly and each is within 1 of its exact share.
 */
export function apportion(total: number, weights: readonly number[]): number[] {
    const sum = weights.reduce((accumulator, weight) => accumulator + weight, 0);
    if (sum <= 0) return weights.map(() => 0);
    const exact = weights.map((weight) => (total * weight) / sum);
    const parts = exact.map(Math.floor);
    let left = total - parts.reduce((accumulator, part) => accumulator + part, 0);
    const order = exact
        .map((share, index) => ({remainder: share - parts[index], index}))
        .sort((a, b) => b.remainder - a.remainder || a.index - b.index);
    for (const {index} of order) {
        if (left <= 0) break;
        parts[index]++;
        left--;
    }
    return parts;
}
