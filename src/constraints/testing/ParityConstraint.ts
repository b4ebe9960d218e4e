import {ConstraintViolationError} from "../../errors.js";
import {acceptTokensInTurn, maskRowsInTurn} from "../stepsOnCallingThread.js";
import type {TokenConstraint} from "../../backend/TokenConstraint.js";

/**
 * A small automaton for tests: each token must differ in parity from the one before it, the first
 * may not be in `firstForbidden`, and `endToken` may come only after an odd token. Counts the
 * instances not yet disposed of, so a test can check none leaks.
 */
export class ParityConstraint implements TokenConstraint {
    public static live = 0;
    private disposed = false;
    private marked: number | undefined;

    public constructor(
        private readonly endToken: number,
        private readonly firstForbidden: ReadonlySet<number>,
        private last: number | undefined = undefined
    ) {
        ParityConstraint.live++;
    }

    public allows(token: number): boolean {
        if (token === this.endToken) return this.last !== undefined && this.last % 2 === 1;
        if (this.last === undefined) return !this.firstForbidden.has(token);
        return token % 2 !== this.last % 2;
    }

    /** Masks at once (the row is masked when this returns); the promise only fits the interface. */
    public maskLogits(row: Float64Array): Promise<void> {
        for (let id = 0; id < row.length; id++) if (!this.allows(id)) row[id] = -Infinity;
        return Promise.resolve();
    }

    public accept(token: number): void {
        if (!this.allows(token)) throw new ConstraintViolationError(`token ${token} may not follow ${this.last}`);
        this.last = token;
    }

    public acceptTokens(tokens: readonly number[], options: {readonly restore?: boolean} = {}): Promise<number> {
        return acceptTokensInTurn(this, tokens, options.restore === true);
    }

    public maskRows(rows: readonly Float64Array[], tokens: readonly number[], options: {readonly greedy: boolean}): Promise<number> {
        return maskRowsInTurn(this, rows, tokens, options.greedy);
    }

    public mark(): void {
        this.marked = this.last;
    }

    public rewind(): void {
        this.last = this.marked;
    }

    public dispose(): void {
        if (this.disposed) return;
        this.disposed = true;
        ParityConstraint.live--;
    }
}
