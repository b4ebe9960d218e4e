import {InvalidDistributionError, TokenOutOfRangeError} from "../errors.js";
import type {TokenConstraint} from "./TokenConstraint.js";

/**
 * `inner` (a constraint over `innerSize` ids) seen through the first `size` ids, as
 * restrictVocabulary sees a backend: rows have `size` entries, and ids at or beyond it are refused as
 * input. The grammar's choice among the ids beyond never reaches the row: they are masked anyway.
 * Where the grammar allows only ids beyond `size`, a masked row is all −Infinity.
 */
export class RestrictedConstraint implements TokenConstraint {
    /** A row of the inner vocabulary: the ids beyond `size` stay −Infinity (masking only writes −Infinity), so the inner mask skips them. */
    private scratch: Float64Array | undefined;

    public constructor(
        private readonly inner: TokenConstraint,
        private readonly size: number,
        private readonly innerSize: number
    ) {}

    public allows(token: number): boolean {
        this.checkToken(token);
        return this.inner.allows(token);
    }

    public async maskLogits(row: Float64Array): Promise<void> {
        if (row.length !== this.size)
            throw new InvalidDistributionError(`holds ${row.length} entries; the vocabulary has ${this.size}`, "row");
        this.scratch ??= new Float64Array(this.innerSize).fill(-Infinity);
        this.scratch.set(row);
        await this.inner.maskLogits(this.scratch);
        row.set(this.scratch.subarray(0, this.size));
    }

    public async maskRows(rows: readonly Float64Array[], tokens: readonly number[], options: {readonly greedy: boolean}): Promise<number> {
        for (const row of rows)
            if (row.length !== this.size)
                throw new InvalidDistributionError(`holds ${row.length} entries; the vocabulary has ${this.size}`, "row");
        for (const token of tokens) this.checkToken(token);
        const inner = rows.map((row) => {
            const scratch = new Float64Array(this.innerSize).fill(-Infinity);
            scratch.set(row);
            return scratch;
        });
        const masked = await this.inner.maskRows(inner, tokens, options);
        rows.forEach((row, index) => row.set(inner[index]!.subarray(0, this.size)));
        return masked;
    }

    public accept(token: number): void {
        this.checkToken(token);
        this.inner.accept(token);
    }

    public acceptTokens(tokens: readonly number[], options?: {readonly restore?: boolean}): Promise<number> {
        for (const token of tokens) this.checkToken(token);
        return this.inner.acceptTokens(tokens, options);
    }

    public mark(): void {
        this.inner.mark();
    }

    public rewind(): void {
        this.inner.rewind();
    }

    public dispose(): void {
        this.inner.dispose();
    }

    private checkToken(token: number): void {
        if (!Number.isInteger(token) || token < 0 || token >= this.size)
            throw new TokenOutOfRangeError(`token ${token} is outside [0, ${this.size})`, "token");
    }
}
