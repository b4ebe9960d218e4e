/**
 * The text of a growing token sequence, equal to `decode(all tokens)`, at a cost per update that does
 * not grow with the sequence (decoding everything at every step makes a generation quadratic).
 *
 * A detokenizer joins the tokens' pieces, but a piece's text can depend on its neighbours: the first
 * token of a text may lose its leading space (SentencePiece), a character may be split over byte
 * tokens, and llama.cpp's clean-up of spaces looks at the characters around a space. So, as vLLM's
 * incremental detokenizer does, an update decodes a window that starts `context` tokens before the
 * settled part's end, and takes what it adds beyond the same window cut at that end. Where the cut
 * window is not a prefix of the whole one (a character or a cleaned space across the cut), the whole
 * sequence is decoded instead. The settled part moves forward, `margin` tokens behind the end, only
 * once its text is confirmed to be a prefix of the whole text.
 */
export class IncrementalText {
    /** Tokens whose text is settled: tokens[0, settledTokens) read as settledText in every longer text. */
    private settledTokens = 0;
    private settledText = "";
    /** decode(tokens[anchor, settledTokens)), the window cut at the settled end. */
    private head = "";

    public constructor(
        private readonly decode: (tokens: readonly number[]) => string,
        private readonly settings: {readonly context: number; readonly margin: number; readonly settleEvery: number} = {
            context: 4,
            margin: 8,
            settleEvery: 16
        }
    ) {}

    /** The text of `tokens`: the sequence of the previous call grown by some tokens (any other is decoded whole). */
    public update(tokens: readonly number[]): string {
        if (tokens.length < this.settledTokens) this.reset();
        const anchor = this.anchor();
        const window = this.decode(tokens.slice(anchor));
        const text = window.startsWith(this.head) ? this.settledText + window.slice(this.head.length) : this.decode(tokens);
        if (tokens.length - this.settledTokens >= this.settings.settleEvery + this.settings.margin) this.settle(tokens, text);
        return text;
    }

    private anchor(): number {
        return Math.max(0, this.settledTokens - this.settings.context);
    }

    /** Moves the settled end to `margin` tokens before the end, if its text is a prefix of `text` (the whole text). */
    private settle(tokens: readonly number[], text: string): void {
        const end = tokens.length - this.settings.margin;
        const cut = this.decode(tokens.slice(this.anchor(), end));
        // Text across the old cut that later tokens changed: the new settled part is decoded whole, once.
        const settledText = cut.startsWith(this.head) ? this.settledText + cut.slice(this.head.length) : this.decode(tokens.slice(0, end));
        if (!text.startsWith(settledText)) return;
        this.settledTokens = end;
        this.settledText = settledText;
        this.head = this.decode(tokens.slice(this.anchor(), end));
    }

    private reset(): void {
        this.settledTokens = 0;
        this.settledText = "";
        this.head = "";
    }
}
