/**
 * A constraint on which token may come next (a grammar, a JSON schema compiled to one), advanced
 * token by token. The engine checks drafts on it (acceptTokens with restore), masks the target's
 * logit rows with it (maskRows) and feeds it every emitted token (acceptTokens), so constrained
 * output is always valid; the synchronous methods serve tests and tools.
 */
export interface TokenConstraint {
    /** True when `token` may come next (end-of-generation tokens only where the grammar may end). */
    allows(token: number): boolean;
    /**
     * Sets `row[id]` to −Infinity for every id that may not come next; `row` holds logits over the
     * vocabulary. Asynchronous: a grammar masks on a worker thread (a whole vocabulary takes
     * milliseconds); nothing else may be called on the constraint until the promise settles.
     */
    maskLogits(row: Float64Array): Promise<void>;
    /** Advances past `token`; throws ConstraintViolationError when it is not allowed here. */
    accept(token: number): void;
    /**
     * Accepts `tokens` in order while each is allowed and resolves with how many were; with
     * `restore`, the state is put back afterwards (a draft checked). Asynchronous: a grammar does it
     * on a worker thread, since one token can cost a grammar far more than its construction did.
     * Nothing else may be called on the constraint until the promise settles.
     */
    acceptTokens(tokens: readonly number[], options?: {readonly restore?: boolean}): Promise<number>;
    /**
     * One verification step's masks: `rows[i]` masked (as maskLogits) in the state after
     * `tokens[0..i)`, stopping after the first row whose token is missing or not allowed (later rows
     * are left as they are); with `greedy`, a row whose argmax the constraint allows is left whole.
     * The state is unchanged afterwards. Resolves with the number of rows masked; asynchronous as
     * acceptTokens.
     */
    maskRows(rows: readonly Float64Array[], tokens: readonly number[], options: {readonly greedy: boolean}): Promise<number>;
    /** Remembers the current state (one mark: a later one replaces it); rewind() returns to it. */
    mark(): void;
    /** Returns to the state mark() remembered (cheap: no copy of the grammar is made for it). */
    rewind(): void;
    /** Frees the native state; idempotent. */
    dispose(): void;
}
