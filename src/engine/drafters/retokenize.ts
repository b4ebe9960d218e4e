/** The two halves of a tokenizer that drafting across tokenizers needs (a ModelBackend has both). */
export interface TextTokenizer {
    tokenize(text: string): number[];
    detokenize(tokens: readonly number[]): string;
}

/**
 * `text` without a trailing incomplete UTF-8 character: a token that ends inside a character (a
 * byte-level vocabulary's byte pieces) decodes to U+FFFD until the rest of its bytes arrive.
 */
export function withoutPartialCharacter(text: string): string {
    let end = text.length;
    while (end > 0 && text.charCodeAt(end - 1) === 0xfffd) end--;
    return text.slice(0, end);
}

/** The last `length` UTF-16 units of `text` or fewer, never starting inside a surrogate pair. */
export function textTail(text: string, length: number): string {
    let start = Math.max(0, text.length - length);
    const unit = text.charCodeAt(start);
    if (start > 0 && unit >= 0xdc00 && unit <= 0xdfff) start--;
    return text.slice(start);
}

/**
 * The tokens of `text` as `tokenizer` continues it after `context`: tokenize(context + text), cut
 * after the leading tokens whose decoded text is exactly `context`. Tokenizing `text` alone can
 * differ at its start (a piece that merges across the boundary, digit groups, an SPM space prefix);
 * comparing text prefixes keeps only tokens that start where `text` starts. Undefined when a token
 * straddles the end of `context` (no token boundary falls there).
 */
export function tokensContinuing(tokenizer: TextTokenizer, context: string, text: string): number[] | undefined {
    const tokens = tokenizer.tokenize(context + text);
    if (context === "") return tokens;
    for (let split = 1; split <= tokens.length; split++) {
        const decoded = tokenizer.detokenize(tokens.slice(0, split));
        if (decoded === context) return tokens.slice(split);
        if (!context.startsWith(withoutPartialCharacter(decoded))) return undefined;
    }
    return undefined;
}

/**
 * The text `tokens` add after `contextTokens`: decode(context + tokens) less decode(context), so a
 * detokenizer's treatment of a sequence's first token (SPM drops its leading space) does not apply
 * to tokens in mid-text. Falls back to decoding `tokens` alone when the context's text is not a
 * prefix (a detokenizer that cleans up spaces rewrote the boundary).
 */
export function textAfter(tokenizer: TextTokenizer, contextTokens: readonly number[], tokens: readonly number[]): string {
    if (contextTokens.length === 0) return tokenizer.detokenize(tokens);
    const base = tokenizer.detokenize(contextTokens);
    const whole = tokenizer.detokenize([...contextTokens, ...tokens]);
    return whole.startsWith(base) ? whole.slice(base.length) : tokenizer.detokenize(tokens);
}

/** Characters of earlier text a re-tokenization sees as context. */
const contextCharacters = 32;
/** Tokens at the end of the text that stay open to re-tokenization as more text arrives. */
const openTokens = 8;

/**
 * One model's tokenization of a growing text that other tokens produce (the draft model's view of
 * the target's text), kept in step without re-tokenizing the whole text each time: a frozen prefix
 * whose tokens never change and an open tail that is re-tokenized, with the frozen text's end as
 * context, whenever the text grows. A tail longer than 2 × 8 tokens freezes all but its last 8, at a
 * cut where re-tokenizing the rest reproduces the same tokens. Text that no longer starts with the
 * frozen text (a detokenizer rewrote earlier text), or a tail that cannot be continued cleanly after
 * it, is re-tokenized whole.
 */
export class IncrementalTokenization {
    private frozenTokens: number[] = [];
    private frozenText = "";
    private openTail: number[] = [];

    public constructor(private readonly tokenizer: TextTokenizer) {}

    /** The tokens of `text`; `text` normally extends the text of the previous call. */
    public update(text: string): readonly number[] {
        if (!text.startsWith(this.frozenText)) this.thaw();
        let open = tokensContinuing(this.tokenizer, textTail(this.frozenText, contextCharacters), text.slice(this.frozenText.length));
        if (open === undefined) {
            this.thaw();
            open = this.tokenizer.tokenize(text);
        }
        this.openTail = open;
        this.freeze(text.slice(this.frozenText.length));
        return this.tokens;
    }

    /** Tokens of the frozen prefix (never re-tokenized again). */
    public get frozenCount(): number {
        return this.frozenTokens.length;
    }

    public get tokens(): number[] {
        return [...this.frozenTokens, ...this.openTail];
    }

    private thaw(): void {
        this.frozenTokens = [];
        this.frozenText = "";
    }

    private freeze(openText: string): void {
        if (this.openTail.length <= 2 * openTokens) return;
        const context = this.frozenTokens.slice(-openTokens);
        // A few cuts are tried (a cut inside a character or a merge fails); the tail stays open otherwise.
        for (let cut = this.openTail.length - openTokens; cut > this.openTail.length - 2 * openTokens; cut--) {
            const closed = this.openTail.slice(0, cut);
            const closedText = textAfter(this.tokenizer, context, closed);
            if (closedText !== withoutPartialCharacter(closedText) || !openText.startsWith(closedText)) continue;
            const rest = this.openTail.slice(cut);
            const again = tokensContinuing(
                this.tokenizer,
                textTail(this.frozenText + closedText, contextCharacters),
                openText.slice(closedText.length)
            );
            if (again === undefined || again.length !== rest.length || again.some((token, index) => token !== rest[index])) continue;
            this.frozenTokens.push(...closed);
            this.frozenText += closedText;
            this.openTail = rest;
            return;
        }
    }
}
