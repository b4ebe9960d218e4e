import type {TokenLogprob} from "../distributions/tokenLogprobs.js";

/** A token id's text, as the model detokenizes it alone. */
export type TokenText = (token: number) => string;

/** JSON has no −Infinity: OpenAI's API reports a token of probability zero as −9999. */
function finite(logprob: number): number {
    return Number.isFinite(logprob) ? logprob : -9999;
}

/** UTF-8 bytes of a token's text; null where the token is part of a character (its text is then U+FFFD). */
function bytesOf(text: string): number[] | null {
    return text.includes("\uFFFD") ? null : [...Buffer.from(text, "utf8")];
}

/** Chat completions' `logprobs`: {content: [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}. */
export function chatLogprobs(entries: readonly TokenLogprob[], text: TokenText): Record<string, unknown> {
    return {
        content: entries.map((entry) => {
            const token = text(entry.token);
            return {
                token,
                logprob: finite(entry.logprob),
                bytes: bytesOf(token),
                top_logprobs: entry.top.map((alternative) => {
                    const alternativeText = text(alternative.token);
                    return {token: alternativeText, logprob: finite(alternative.logprob), bytes: bytesOf(alternativeText)};
                })
            };
        }),
        refusal: null
    };
}

/**
 * Completions' `logprobs`: {tokens, token_logprobs, top_logprobs: [{text: logprob}], text_offset},
 * text_offset counted in characters of the completion from `offset` (a stream's earlier chunks).
 * Alternatives whose texts coincide keep the most likely one, as a JSON object must.
 */
export function completionLogprobs(entries: readonly TokenLogprob[], text: TokenText, offset: number): Record<string, unknown> {
    const tokens: string[] = [];
    const textOffset: number[] = [];
    let at = offset;
    for (const entry of entries) {
        const token = text(entry.token);
        tokens.push(token);
        textOffset.push(at);
        at += token.length;
    }
    return {
        tokens,
        token_logprobs: entries.map((entry) => finite(entry.logprob)),
        top_logprobs: entries.map((entry) => {
            const top: Record<string, number> = {};
            for (const alternative of entry.top) top[text(alternative.token)] ??= finite(alternative.logprob);
            return top;
        }),
        text_offset: textOffset
    };
}
