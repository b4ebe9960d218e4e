/** One leaf where two JSON values differ; `undefined` on a side means the field is missing there. */
export interface FieldDifference {
    /** JSONPath-like location: $.limit, $.filters[0].field */
    readonly path: string;
    readonly a: unknown;
    readonly b: unknown;
}

/** Field-level differences between two JSON values, recursing into objects and arrays. */
export function diffJsonFields(a: unknown, b: unknown, path = "$"): FieldDifference[] {
    if (Array.isArray(a) && Array.isArray(b)) {
        return Array.from({length: Math.max(a.length, b.length)}, (_value, index) =>
            diffJsonFields(a[index], b[index], `${path}[${index}]`)
        ).flat();
    }
    if (isObject(a) && isObject(b)) {
        const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
        return keys.flatMap((key) =>
            diffJsonFields(a[key], b[key], /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`)
        );
    }
    return JSON.stringify(a) === JSON.stringify(b) ? [] : [{path, a, b}];
}

function isObject(value: unknown): value is Record<string, unknown> {
    return value !== null && typeof value === "object" && !Array.isArray(value);
}
