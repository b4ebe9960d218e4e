import {PromptExceedsContextError} from "../errors.js";

/**
 * The context rule every command applies (docs/install.md, "Context size and prompts that do not
 * fit"): a prompt fits when it and the tokens asked for fit the context together, prompt tokens
 * (BOS included) + maxTokens ≤ contextSize, the check an OpenAI-compatible server makes of
 * max_tokens. No command cuts a prompt to make it fit.
 */
export function fitsContext(promptTokens: number, maxTokens: number, contextSize: number): boolean {
    return promptTokens + maxTokens <= contextSize;
}

/** More than half of a run's items were skipped under the rule: too little of the battery for a result (exit 3). */
export function mostSkipped(skipped: number, total: number): boolean {
    return skipped * 2 > total;
}

/** The typed refusal of a prompt that does not fit with `maxTokens` generated tokens. */
export function contextRefusal(promptTokens: number, maxTokens: number, contextSize: number, field = "prompt"): PromptExceedsContextError {
    return new PromptExceedsContextError(
        promptTokens,
        contextSize,
        field,
        `has ${promptTokens} tokens; with ${maxTokens} generated tokens that is more than the ${contextSize}-token context`
    );
}

/** The items an audit skipped under the rule: reported on stderr, in its report and JSON, and in its exit code. */
export interface ContextSkips {
    /** Ids (or 1-based numbers) of the skipped items, in battery order. */
    readonly ids: readonly string[];
    /** Items in the run, skipped ones included. */
    readonly total: number;
    readonly contextSize: number;
    readonly maxTokens: number;
}
