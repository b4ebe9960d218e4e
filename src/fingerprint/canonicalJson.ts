/**
 * JSON with object keys sorted at every depth and undefined members dropped, so two equal values
 * always serialise to the same bytes whatever order their keys were built in.
 */
export function canonicalJson(value: unknown): string {
    return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
    if (Array.isArray(value)) return value.map(sortKeys);
    if (value !== null && typeof value === "object") {
        return Object.fromEntries(
            Object.keys(value)
                .sort()
                .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
                .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])])
        );
    }
    return value;
}
