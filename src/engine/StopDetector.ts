import {IncrementalText} from "./IncrementalText.js";

export type FinishReason = "eos" | "length" | "stop";

/**
 * Decides where generation ends: an end-of-generation token (not emitted), the token budget, or a
 * stop string (the text is cut before it, as vLLM/OpenAI `stop` does). Stop strings are matched on
 * the decoded text of everything emitted so far (kept up to date by IncrementalText), so a stop
 * string split across tokens is found.
 *
 * Streaming text: a token can end in the middle of a UTF-8 character (byte-level vocabularies), which
 * decodes to U+FFFD until the next byte arrives, so trailing U+FFFD is held back from `text` until
 * it resolves or generation finishes. Likewise, with `holdSpaces` (the default), a space followed by
 * fewer than three characters, which a detokenizer that cleans up spaces may still remove; one that
 * never does (detokenizerCleansSpaces) streams it at once.
 */
export class StopDetector {
    private readonly tokens: number[] = [];
    private fullText = "";
    private streamed = 0;
    private readonly incremental: IncrementalText;

    public constructor(
        private readonly options: {
            endTokens: ReadonlySet<number>;
            maxTokens: number;
            stop: readonly string[];
            decode: (tokens: readonly number[]) => string;
            holdSpaces?: boolean;
        }
    ) {
        this.incremental = new IncrementalText(options.decode);
    }

    public get emittedTokens(): readonly number[] {
        return this.tokens;
    }

    public get text(): string {
        return this.fullText;
    }

    /** Offer the next tokens; returns the tokens kept, the new text to stream, and why generation ends, if it does. */
    public accept(offered: readonly number[]): {tokens: number[]; text: string; finished?: FinishReason} {
        let keep = offered.length;
        let finished: FinishReason | undefined;
        const endIndex = offered.findIndex((token) => this.options.endTokens.has(token));
        if (endIndex >= 0) {
            keep = endIndex;
            finished = "eos";
        }
        const room = this.options.maxTokens - this.tokens.length;
        if (keep >= room) {
            if (keep > room || finished == null) finished = "length";
            keep = Math.max(0, room);
        }
        let kept = offered.slice(0, keep);
        const before = this.tokens.length;
        this.tokens.push(...kept);
        const previousLength = this.fullText.length;
        this.fullText = this.incremental.update(this.tokens);

        if (this.options.stop.length > 0) {
            const longest = Math.max(...this.options.stop.map((stop) => stop.length));
            // A new match must end in the new text; start where it could begin.
            const searchFrom = Math.max(0, Math.min(previousLength, this.streamed) - longest + 1);
            let cut = -1;
            for (const stop of this.options.stop) {
                const index = this.fullText.indexOf(stop, searchFrom);
                if (index >= 0 && (cut < 0 || index < cut)) cut = index;
            }
            if (cut >= 0) {
                // Keep tokens only up to the one that completes the stop string, so a multi-token
                // speculative step reports the same tokens as one-token-at-a-time decoding would.
                const stopEnd = cut + this.options.stop.find((stop) => this.fullText.startsWith(stop, cut))!.length;
                let needed = kept.length;
                while (needed > 1 && this.options.decode(this.tokens.slice(0, before + needed - 1)).length >= stopEnd) needed--;
                kept = kept.slice(0, needed);
                this.tokens.length = before + needed;
                this.fullText = this.fullText.slice(0, cut);
                finished = "stop";
            }
        }
        return {tokens: kept, text: this.takeStreamable(finished != null), finished};
    }

    private takeStreamable(final: boolean): string {
        let end = this.fullText.length;
        if (!final) {
            while (end > this.streamed && this.fullText.charCodeAt(end - 1) === 0xfffd) end--;
            // Detokenizers that clean up spaces (llama.cpp's clean_spaces, on for llama3: " ," → ",",
            // " 's" → "'s", " ' " → "'") decide a space's fate once three characters follow it.
            const space = this.options.holdSpaces === false ? -1 : this.fullText.lastIndexOf(" ", end - 1);
            if (space >= 0 && space >= this.fullText.length - 3) end = Math.max(this.streamed, Math.min(end, space));
        }
        // Never stream text that a later stop-string cut could take back.
        if (!final && this.options.stop.length > 0) {
            const holdBack = Math.max(...this.options.stop.map((stop) => stop.length)) - 1;
            end = Math.max(this.streamed, Math.min(end, this.fullText.length - holdBack));
        }
        if (end <= this.streamed) return "";
        const text = this.fullText.slice(this.streamed, end);
        this.streamed = end;
        return text;
    }
}
