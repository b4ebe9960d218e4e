/** A tool call found in an output: its name when the JSON gives one, and its arguments. */
export interface ToolCall {
    readonly name: string | null;
    readonly arguments: unknown;
}

/**
 * Tool calls in model output, in order of appearance. Every top-level JSON object or array embedded
 * in the text is parsed (string-aware brace matching, so braces inside strings do not confuse it);
 * then each is read as:
 *  - an OpenAI `tool_calls` array: [{function: {name, arguments: "<json>"}}…];
 *  - an object with `name` and `arguments` (or `parameters`), arguments given as an object or as a
 *    JSON string;
 *  - otherwise a bare JSON object, taken as the arguments of an unnamed call.
 */
export function extractToolCalls(text: string): ToolCall[] {
    return extractJsonValues(text).flatMap((value) => (Array.isArray(value) ? value.flatMap(asCalls) : asCalls(value)));
}

function asCalls(value: unknown): ToolCall[] {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return [];
    const record = value as Record<string, unknown>;
    const holder = record.function !== null && typeof record.function === "object" ? (record.function as Record<string, unknown>) : record;
    const argumentsValue = holder.arguments ?? holder.parameters;
    if (typeof holder.name === "string" && argumentsValue !== undefined)
        return [{name: holder.name, arguments: typeof argumentsValue === "string" ? parseOrKeep(argumentsValue) : argumentsValue}];
    return [{name: null, arguments: value}];
}

function parseOrKeep(text: string): unknown {
    try {
        return JSON.parse(text);
    } catch {
        return text;
    }
}

/** Every maximal balanced {…} or […] span of the text that parses as JSON. */
function extractJsonValues(text: string): unknown[] {
    const values: unknown[] = [];
    let index = 0;
    while (index < text.length) {
        const start = text.slice(index).search(/[{[]/);
        if (start < 0) break;
        const begin = index + start;
        const end = matchingClose(text, begin);
        if (end !== null) {
            try {
                values.push(JSON.parse(text.slice(begin, end + 1)));
                index = end + 1;
                continue;
            } catch {
                // Not JSON (prose in brackets): look for JSON starting inside it.
            }
        }
        index = begin + 1;
    }
    return values;
}

function matchingClose(text: string, begin: number): number | null {
    const stack: string[] = [];
    let inString = false;
    for (let index = begin; index < text.length; index++) {
        const character = text[index];
        if (inString) {
            if (character === "\\") index++;
            else if (character === '"') inString = false;
        } else if (character === '"') {
            inString = true;
        } else if (character === "{" || character === "[") {
            stack.push(character === "{" ? "}" : "]");
        } else if (character === "}" || character === "]") {
            if (stack.pop() !== character) return null;
            if (stack.length === 0) return index;
        }
    }
    return null;
}
