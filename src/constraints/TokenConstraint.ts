/**
 * A constraint on which token may come next (a grammar, a JSON schema compiled to one), advanced
 * token by token. The engine masks the target's logit rows with it, checks drafts against clones
 * of it, and feeds it every emitted token, so constrained output is always valid.
 */
export interface TokenConstraint {
    /** True when `token` may come next (end-of-generation tokens only where the grammar may end). */
    allows(token: number): boolean;
    /** Sets `row[id]` to −Infinity for every id that may not come next; `row` holds logits over the vocabulary. */
    maskLogits(row: Float64Array): void;
    /** Advances past `token`; throws ConstraintViolationError when it is not allowed here. */
    accept(token: number): void;
    /** An independent copy in the same state (for checking a draft without advancing this one). */
    clone(): TokenConstraint;
    /** Frees the native state; idempotent. */
    dispose(): void;
}
