/** Leading tokens `a` and `b` have in common, counting at most `limit` of them. */
export function sharedPrefixLength(a: readonly number[], b: readonly number[], limit = Infinity): number {
    const end = Math.min(a.length, b.length, limit);
    let length = 0;
    while (length < end && a[length] === b[length]) length++;
    return length;
}
