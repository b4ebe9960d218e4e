import type {NativeGrammarHandle} from "../backend/nativeAddon.js";
import {ConstraintViolationError, InvalidDistributionError, TokenOutOfRangeError} from "../errors.js";
import type {TokenConstraint} from "./TokenConstraint.js";

/**
 * A TokenConstraint over a GBNF grammar: llama.cpp's grammar sampler in the native addon
 * (NativeGrammar), over the vocabulary of the model it was made for (NativeBackend.createConstraint).
 *
 * End-of-generation tokens are allowed only where the grammar may end, and control tokens never
 * (they detokenize to nothing). Cost: `allows` and `accept` check one token; `maskLogits` runs the
 * grammar over every id whose logit is not already −Infinity (llama.cpp decodes each token's text
 * against the grammar's stacks), so masking a row already cut by top-k is cheaper than a full one.
 */
export class GrammarConstraint implements TokenConstraint {
    /** Number of token ids; rows given to maskLogits have this length. */
    public readonly vocabularySize: number;
    private disposed = false;

    /** Takes ownership of `grammar`: dispose() frees it. */
    public constructor(private readonly grammar: NativeGrammarHandle) {
        this.vocabularySize = grammar.vocabularySize;
    }

    public allows(token: number): boolean {
        this.checkToken(token);
        return this.grammar.allows(token);
    }

    public maskLogits(row: Float64Array): void {
        const size = this.vocabularySize;
        if (row.length !== size) throw new InvalidDistributionError(`holds ${row.length} entries; the vocabulary has ${size}`, "row");
        this.grammar.mask(row);
    }

    /** Advances past `token`; a ConstraintViolationError (the grammar unchanged) when it may not come next. */
    public accept(token: number): void {
        this.checkToken(token);
        if (!this.grammar.allows(token)) throw new ConstraintViolationError(`token ${token} is not allowed by the grammar here`);
        this.grammar.accept(token);
    }

    public clone(): GrammarConstraint {
        return new GrammarConstraint(this.grammar.clone());
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
