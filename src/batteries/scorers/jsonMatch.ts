import {isDeepStrictEqual} from "node:util";

/**
 * Whether an output's first line is the same JSON value as the reference: a tool call is right when
 * its parsed call is, whatever its spacing or key order (as function-calling benchmarks compare
 * parsed calls, not strings). Output that does not parse is wrong; a reference that does not parse
 * is compared as text.
 */
export function jsonMatch(output: string, reference: string): boolean {
    const firstLine = output.trim().split("\n")[0];
    const expected = parseOrUndefined(reference);
    if (expected === undefined) return firstLine === reference.trim();
    const actual = parseOrUndefined(firstLine);
    return actual !== undefined && isDeepStrictEqual(actual, expected);
}

function parseOrUndefined(text: string): unknown {
    try {
        return JSON.parse(text) as unknown;
    } catch {
        return undefined;
    }
}
