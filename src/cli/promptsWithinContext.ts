import {addsBos} from "../backend/addsBos.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {fitsContext} from "../engine/fitsContext.js";
import {InsufficientDataError} from "../errors.js";

export interface SkippedPrompt {
    /** 0-based position in the prompt list. */
    readonly index: number;
    readonly tokens: number;
    readonly contextSize: number;
}

/**
 * Splits prompts into those that fit the models' context with `maxTokens` generated tokens (BOS
 * counted where the target adds it; fitsContext) and those that do not, so a command skips and
 * reports long prompts up front instead of measuring runs the context cuts short. No prompt fitting
 * is an InsufficientDataError (exit 3).
 */
export function promptsWithinContext(
    target: ModelBackend,
    draft: ModelBackend | undefined,
    prompts: readonly string[],
    maxTokens: number,
    field: string
): {kept: string[]; skipped: SkippedPrompt[]} {
    const contextSize = Math.min(target.contextSize, draft?.contextSize ?? Infinity);
    const bos = addsBos(target) ? 1 : 0;
    const kept: string[] = [];
    const skipped: SkippedPrompt[] = [];
    for (const [index, prompt] of prompts.entries()) {
        const tokens = target.tokenize(prompt);
        const length = tokens.length + (bos === 1 && tokens[0] !== target.bosToken ? 1 : 0);
        if (fitsContext(length, maxTokens, contextSize)) kept.push(prompt);
        else skipped.push({index, tokens: length, contextSize});
    }
    if (kept.length === 0 && skipped.length > 0)
        throw new InsufficientDataError(
            `no prompt fits the ${contextSize}-token context with ${maxTokens} generated tokens (the shortest has ${Math.min(...skipped.map((entry) => entry.tokens))} tokens)`,
            field
        );
    return {kept, skipped};
}

/** One stderr line naming the skipped prompts (1-based, as a person counts lines). */
export function skippedPromptsLine(command: string, skipped: readonly SkippedPrompt[], total: number, maxTokens: number): string {
    if (skipped.length === 0) return "";
    const listed = skipped
        .slice(0, 10)
        .map((entry) => `#${entry.index + 1} (${entry.tokens} tokens)`)
        .join(", ");
    return (
        `${command}: skipped ${skipped.length} of ${total} prompt(s) that do not fit the ${skipped[0].contextSize}-token context ` +
        `with --max-tokens ${maxTokens}: ${listed}${skipped.length > 10 ? ", …" : ""}\n`
    );
}
