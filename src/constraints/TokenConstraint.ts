/**
 * A constraint on which token may come next (a grammar, a JSON schema compiled to one), advanced
 * token by token. The engine masks the target's logit rows with it, checks drafts on it between
 * mark() and rewind(), and feeds it every emitted token, so constrained output is always valid.
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
    /** Remembers the current state (one mark: a later one replaces it); rewind() returns to it. */
    mark(): void;
    /** Returns to the state mark() remembered (cheap: no copy of the grammar is made for it). */
    rewind(): void;
    /** Frees the native state; idempotent. */
    dispose(): void;
}
