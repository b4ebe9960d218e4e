import type {z} from "zod";
import {InvalidInputError} from "../errors.js";

type Issue = z.core.$ZodIssue;

/** Deepest nesting of arrays and objects a request body may have (a tool's JSON Schema included). */
export const maxBodyDepth = 64;

/**
 * Parses a request body as JSON and validates it; any failure is an InvalidInputError whose field
 * names the offending parameter in OpenAI's style (`messages[0].content`), or none for the body.
 * Bodies nested deeper than maxBodyDepth are refused first: validation, templates and
 * JSON.stringify all recurse, and 10^4 levels overflow the stack.
 */
export function parseRequestBody<Schema extends z.ZodType>(text: string, schema: Schema): z.output<Schema> {
    let value: unknown;
    try {
        value = JSON.parse(text);
    } catch (error) {
        throw new InvalidInputError(`the body is not valid JSON (${(error as Error).message})`);
    }
    // The text's nesting is counted first: the walk that finds the path allocates per container (tens of ms for a large schema).
    const tooDeep = textNestingDepth(text) > maxBodyDepth ? pathDeeperThan(value, maxBodyDepth) : undefined;
    if (tooDeep !== undefined) throw new InvalidInputError(`is nested more than ${maxBodyDepth} levels deep`, fieldName(tooDeep));
    const parsed = schema.safeParse(value);
    if (parsed.success) return parsed.data;
    const issue = deepestIssue(parsed.error.issues[0]);
    if (issue.code === "unrecognized_keys") {
        const key = issue.keys[0];
        throw new InvalidInputError(`unrecognized request argument "${key}"`, fieldName([...issue.path, key]));
    }
    const field = fieldName(issue.path);
    if (field === undefined) throw new InvalidInputError(`the body must be a JSON object: ${issue.message}`);
    throw new InvalidInputError(issue.message, field);
}

/**
 * A union's own issue only says "Invalid input". Among its branches' issues the telling one is where
 * the value had the branch's type but broke a constraint (`gamma` below 0, a second prompt), not a
 * type mismatch with a branch that was never meant; ties go to the deepest path (speculative.gamma
 * rather than speculative). A branch whose type the value does not have at all is left out: zod still
 * runs its length checks on any value with a length (a string's 1000-character limit on a list of
 * 10^4 stop strings), and those would name a limit that is not the one broken.
 */
function deepestIssue(issue: Issue): Issue {
    if (issue.code !== "invalid_union" || issue.errors.length === 0) return issue;
    const rank = (candidate: Issue): number => (candidate.code === "invalid_type" ? 0 : 1_000) + candidate.path.length;
    const typeMatched = issue.errors.filter(
        (branch) => !branch.some((candidate) => candidate.code === "invalid_type" && candidate.path.length === 0)
    );
    let best: Issue | undefined;
    for (const branch of typeMatched.length > 0 ? typeMatched : issue.errors) {
        for (const candidate of branch) {
            const resolved = deepestIssue({...candidate, path: [...issue.path, ...candidate.path]} as Issue);
            if (best === undefined || rank(resolved) > rank(best)) best = resolved;
        }
    }
    return best ?? issue;
}

function fieldName(path: readonly PropertyKey[]): string | undefined {
    if (path.length === 0) return undefined;
    return path.map((part, index) => (typeof part === "number" ? `[${part}]` : `${index === 0 ? "" : "."}${String(part)}`)).join("");
}

/** The deepest nesting of arrays and objects in JSON text (the root container is 1), outside strings: one pass over its characters. */
function textNestingDepth(text: string): number {
    const quote = 34;
    const backslash = 92;
    let depth = 0;
    let deepest = 0;
    let inString = false;
    for (let index = 0; index < text.length; index++) {
        const c = text.charCodeAt(index);
        if (inString) {
            if (c === backslash) index++;
            else if (c === quote) inString = false;
        } else if (c === quote) inString = true;
        else if (c === 123 || c === 91) deepest = Math.max(deepest, ++depth);
        else if (c === 125 || c === 93) depth--;
    }
    return deepest;
}

/** The path to the first value nested deeper than `limit` levels (found without recursion), or undefined. */
function pathDeeperThan(root: unknown, limit: number): PropertyKey[] | undefined {
    interface Node {
        readonly value: object;
        readonly depth: number;
        readonly parent?: Node;
        readonly key?: PropertyKey;
    }
    if (root === null || typeof root !== "object") return undefined;
    const stack: Node[] = [{value: root, depth: 0}];
    while (stack.length > 0) {
        const node = stack.pop()!;
        if (node.depth >= limit) {
            const path: PropertyKey[] = [];
            for (let at: Node | undefined = node; at?.key !== undefined; at = at.parent) path.unshift(at.key);
            return path;
        }
        // Only containers are pushed: a million-id array costs one pass over its entries.
        const visit = (child: unknown, key: PropertyKey): void => {
            if (child !== null && typeof child === "object") stack.push({value: child, depth: node.depth + 1, parent: node, key});
        };
        if (Array.isArray(node.value)) for (let index = 0; index < node.value.length; index++) visit(node.value[index], index);
        else for (const key in node.value) visit((node.value as Record<string, unknown>)[key], key);
    }
    return undefined;
}
