import type {NativeGrammarHandle} from "../backend/nativeAddon.js";
import {ConstraintViolationError, GrammarTooComplexError, InvalidDistributionError, TokenOutOfRangeError} from "../errors.js";
import type {TokenConstraint} from "./TokenConstraint.js";

export interface GrammarConstraintOptions {
    /**
     * Milliseconds of mask work (on the worker thread) this constraint may spend over its life; past
     * it the next mask throws GrammarTooComplexError. Default: no limit.
     */
    readonly computeBudgetMs?: number;
    /** Names the grammar in a budget error (a request field). */
    readonly field?: string;
}

/**
 * A TokenConstraint over a GBNF grammar: llama.cpp's grammar in the native addon (NativeGrammar),
 * over the vocabulary of the model it was made for (NativeBackend.createConstraint, compileConstraint).
 *
 * End-of-generation tokens are allowed only where the grammar may end, and control tokens never
 * (they detokenize to nothing). Cost: `allows` and `accept` check one token on the calling thread;
 * `maskLogits` runs the grammar over every id whose logit is not already −Infinity (llama.cpp decodes
 * each token's text against the grammar's stacks) on a worker thread, so masking a row already cut by
 * top-k is cheaper than a full one, and the event loop stays free meanwhile. The mask time adds up
 * against the compute budget.
 */
export class GrammarConstraint implements TokenConstraint {
    /** Number of token ids; rows given to maskLogits have this length. */
    public readonly vocabularySize: number;
    /** Milliseconds spent masking so far (worker time). */
    public maskMilliseconds = 0;
    private disposed = false;

    /** Takes ownership of `grammar`: dispose() frees it. */
    public constructor(
        private readonly grammar: NativeGrammarHandle,
        private readonly options: GrammarConstraintOptions = {}
    ) {
        this.vocabularySize = grammar.vocabularySize;
    }

    public allows(token: number): boolean {
        this.checkToken(token);
        return this.grammar.allows(token);
    }

    public async maskLogits(row: Float64Array): Promise<void> {
        const size = this.vocabularySize;
        if (row.length !== size) throw new InvalidDistributionError(`holds ${row.length} entries; the vocabulary has ${size}`, "row");
        const budget = this.options.computeBudgetMs;
        if (budget !== undefined && this.maskMilliseconds > budget)
            throw new GrammarTooComplexError(
                `the grammar's masks took ${Math.round(this.maskMilliseconds)} ms, over this request's compute budget of ${budget} ms`,
                this.options.field
            );
        this.maskMilliseconds += await this.grammar.mask(row);
    }

    /** Advances past `token`; a ConstraintViolationError (the grammar unchanged) when it may not come next. */
    public accept(token: number): void {
        this.checkToken(token);
        if (!this.grammar.allows(token)) throw new ConstraintViolationError(`token ${token} is not allowed by the grammar here`);
        this.grammar.accept(token);
    }

    public mark(): void {
        this.grammar.mark();
    }

    public rewind(): void {
        this.grammar.rewind();
    }

    /** An independent copy in the same state (a deep copy of the grammar; the engine uses mark and rewind instead). */
    public clone(): GrammarConstraint {
        return new GrammarConstraint(this.grammar.clone(), this.options);
    }

    public dispose(): void {
        if (this.disposed) return;
        this.disposed = true;
        this.grammar.dispose();
    }

    private checkToken(token: number): void {
        const size = this.vocabularySize;
        if (!Number.isInteger(token) || token < 0 || token >= size)
            throw new TokenOutOfRangeError(`token ${token} is outside [0, ${size})`, "token");
    }
}
