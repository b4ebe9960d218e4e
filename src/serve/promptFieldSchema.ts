import {z} from "zod";

/** What `prompt` of /v1/completions holds once checked: text or token ids, alone or as a list of one. */
export type PromptField = string | string[] | number[] | number[][];

/**
 * `prompt` of /v1/completions for a model of `contextSize` tokens and `vocabularySize` token ids: text
 * or token ids, one prompt per request (a list of one is accepted, as OpenAI clients send it). The
 * value is checked by the form it has, not as a union of the four forms, so a refusal says what is
 * wrong with the form sent — a second prompt, or an id that is not an integer in [0, vocabulary
 * size) — and names `prompt`. A list longer than the context is refused by its length alone, before
 * any id is looked at (a 1 MB id list then costs well under a millisecond).
 */
export function promptFieldSchema(contextSize: number, vocabularySize: number) {
    return z.unknown().transform((value, context): PromptField => {
        const problem = promptProblem(value, contextSize, vocabularySize);
        if (problem === undefined) return value as PromptField;
        context.issues.push({code: "custom", message: problem, input: value});
        return z.NEVER;
    });
}

/** Why `value` is not a prompt this server takes, or undefined when it is one. */
function promptProblem(value: unknown, contextSize: number, vocabularySize: number): string | undefined {
    if (typeof value === "string") return undefined;
    if (!Array.isArray(value)) return "must be a string, a list of token ids, or a list of one of these";
    const tooLong = (length: number) => `holds ${length} token ids, more than this model's context of ${contextSize} tokens`;
    if (value.length > contextSize) return tooLong(value.length);
    if (value.length === 0) return "must not be empty";
    const first: unknown = value[0];
    if (typeof first === "string" || Array.isArray(first)) {
        if (value.length !== 1) return `one prompt per request is supported, got a list of ${value.length}`;
        if (typeof first === "string") return undefined;
        if (first.length > contextSize) return tooLong(first.length);
        if (first.length === 0) return "must not be empty";
        return tokenIdsProblem(first, vocabularySize, "prompt[0]");
    }
    return tokenIdsProblem(value, vocabularySize, "prompt");
}

function tokenIdsProblem(ids: readonly unknown[], vocabularySize: number, field: string): string | undefined {
    for (let index = 0; index < ids.length; index++) {
        const id = ids[index];
        if (!(Number.isInteger(id) && (id as number) >= 0 && (id as number) < vocabularySize))
            return `token ids must be integers in [0, ${vocabularySize}) (this model's vocabulary); ${field}[${index}] is ${describe(id)}`;
    }
    return undefined;
}

function describe(value: unknown): string {
    const text = typeof value === "number" ? String(value) : JSON.stringify(value);
    return text === undefined ? typeof value : text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
