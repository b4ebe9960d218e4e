import {addsBos} from "../backend/addsBos.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {InvalidInputError} from "../errors.js";

export interface SkippedPrompt {
    /** 0-based position in the prompt list. */
    readonly index: number;
    readonly tokens: number;
    readonly contextSize: number;
}

/**
 * Splits prompts into those that fit the models' context (with BOS where the target adds it and
 * room for one generated token, generate's own condition) and those that do not, so a command
 * skips and reports long prompts up front instead of stopping halfway through a run.
 */
export function promptsWithinContext(
    target: ModelBackend,
    draft: ModelBackend | undefined,
    prompts: readonly string[],
    field: string
): {kept: string[]; skipped: SkippedPrompt[]} {
    const contextSize = Math.min(target.contextSize, draft?.contextSize ?? Infinity);
    const bos = addsBos(target) ? 1 : 0;
    const kept: string[] = [];
    const skipped: SkippedPrompt[] = [];
    for (const [index, prompt] of prompts.entries()) {
        const tokens = target.tokenize(prompt);
        const length = tokens.length + (bos === 1 && tokens[0] !== target.bosToken ? 1 : 0);
        if (length + 1 > contextSize) skipped.push({index, tokens: length, contextSize});
        else kept.push(prompt);
    }
    if (kept.length === 0 && skipped.length > 0)
        throw new InvalidInputError(
            `every prompt is longer than the ${contextSize}-token context (the shortest has ${Math.min(...skipped.map((entry) => entry.tokens))} tokens)`,
            field
        );
    return {kept, skipped};
}

/** One stderr line naming the skipped prompts (1-based, as a person counts lines). */
export function skippedPromptsLine(command: string, skipped: readonly SkippedPrompt[], total: number): string {
    if (skipped.length === 0) return "";
    const listed = skipped
        .slice(0, 10)
        .map((entry) => `#${entry.index + 1} (${entry.tokens} tokens)`)
        .join(", ");
    return `${command}: skipped ${skipped.length} of ${total} prompt(s) longer than the ${skipped[0].contextSize}-token context: ${listed}${skipped.length > 10 ? ", …" : ""}\n`;
}
