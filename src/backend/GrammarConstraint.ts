import type {NativeGrammarHandle, NativeGrammarStep} from "./nativeAddon.js";
import {ConstraintViolationError, GrammarTooComplexError, InvalidDistributionError, TokenOutOfRangeError} from "../errors.js";
import type {TokenConstraint} from "./TokenConstraint.js";

export interface GrammarConstraintOptions {
    /**
     * Milliseconds of grammar work on worker threads (masks, draft checks, accepted tokens) this
     * constraint may spend over its life; past it, or once one call runs past what is left of it, the
     * call rejects with GrammarTooComplexError and the constraint refuses every later one. Default: no limit.
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
 * (they detokenize to nothing). Cost: llama.cpp checks a token against every stack of the grammar's
 * parse, and a grammar built quickly can still multiply its stacks on some token until one check takes
 * minutes. So what a generation calls (maskLogits, maskRows, acceptTokens) runs on libuv's worker pool
 * with the event loop free, and adds up against the compute budget; a call still running when the
 * budget is spent is abandoned (it ends on its worker, the grammar freed after it). `allows` and
 * `accept` check one token on the calling thread, for tests and tools.
 */
export class GrammarConstraint implements TokenConstraint {
    /** Number of token ids; rows given to maskLogits have this length. */
    public readonly vocabularySize: number;
    /** Milliseconds of grammar work spent so far on worker threads. */
    public maskMilliseconds = 0;
    private disposed = false;
    /** Set once a call ran past the budget: the grammar is busy until its worker ends, and this constraint is done. */
    private overBudget: GrammarTooComplexError | undefined;

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
        this.checkRow(row);
        await this.onWorker(async () => ({count: 1, milliseconds: await this.grammar.mask(row)}));
    }

    public async maskRows(rows: readonly Float64Array[], tokens: readonly number[], options: {readonly greedy: boolean}): Promise<number> {
        for (const row of rows) this.checkRow(row);
        const ids = this.tokenArray(tokens);
        return (await this.onWorker(() => this.grammar.maskRows(rows, ids, options.greedy))).count;
    }

    public async acceptTokens(tokens: readonly number[], options: {readonly restore?: boolean} = {}): Promise<number> {
        const ids = this.tokenArray(tokens);
        return (await this.onWorker(() => this.grammar.acceptTokens(ids, options.restore === true))).count;
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

    /**
     * `work`'s result, its worker milliseconds added to the budget's count; GrammarTooComplexError
     * when the budget is spent already, or when `work` is still running once what was left of it has
     * passed (wall time, which includes waiting for a worker).
     */
    private async onWorker(work: () => Promise<NativeGrammarStep>): Promise<NativeGrammarStep> {
        if (this.overBudget !== undefined) throw this.overBudget;
        const budget = this.options.computeBudgetMs;
        if (budget !== undefined && this.maskMilliseconds > budget) throw this.spent(budget);
        const running = work();
        const result = budget === undefined ? await running : await this.withinBudget(running, budget);
        this.maskMilliseconds += result.milliseconds;
        return result;
    }

    private async withinBudget(running: Promise<NativeGrammarStep>, budget: number): Promise<NativeGrammarStep> {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<never>((_resolve, reject) => {
            timer = setTimeout(() => reject(this.spent(budget)), Math.max(0, budget - this.maskMilliseconds));
        });
        // A call abandoned here still settles on its worker: its outcome is dropped.
        running.catch(() => undefined);
        try {
            return await Promise.race([running, late]);
        } finally {
            clearTimeout(timer);
        }
    }

    /** The budget error; once made, every later call throws it. */
    private spent(budget: number): GrammarTooComplexError {
        this.overBudget ??= new GrammarTooComplexError(
            `the grammar's work took more than this request's compute budget of ${budget} ms (a grammar whose parse multiplies on its tokens: simplify it)`,
            this.options.field
        );
        return this.overBudget;
    }

    private checkRow(row: Float64Array): void {
        const size = this.vocabularySize;
        if (row.length !== size) throw new InvalidDistributionError(`holds ${row.length} entries; the vocabulary has ${size}`, "row");
    }

    private tokenArray(tokens: readonly number[]): Int32Array {
        for (const token of tokens) this.checkToken(token);
        return Int32Array.from(tokens);
    }

    private checkToken(token: number): void {
        const size = this.vocabularySize;
        if (!Number.isInteger(token) || token < 0 || token >= size)
            throw new TokenOutOfRangeError(`token ${token} is outside [0, ${size})`, "token");
    }
}
