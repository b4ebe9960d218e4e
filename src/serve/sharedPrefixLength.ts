/** Leading tokens `a` and `b` have in common. */
export function sharedPrefixLength(a: readonly number[], b: readonly number[]): number {
    const limit = Math.min(a.length, b.length);
    let length = 0;
    while (length < limit && a[length] === b[length]) length++;
    return length;
}
