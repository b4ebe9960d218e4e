/** Index of the first position where two sequences differ, or null when they are equal (a prefix differs at its end). */
export function firstDivergence<T>(a: ArrayLike<T>, b: ArrayLike<T>): number | null {
    const length = Math.min(a.length, b.length);
    for (let index = 0; index < length; index++) if (a[index] !== b[index]) return index;
    return a.length === b.length ? null : length;
}
