import {ConstraintViolationError} from "../../errors.js";
import type {TokenConstraint} from "../TokenConstraint.js";

/**
 * A small automaton for tests: each token must differ in parity from the one before it, the first
 * may not be in `firstForbidden`, and `endToken` may come only after an odd token. Counts its clones
 * and disposals, so a test can check none leaks.
 */
export class ParityConstraint implements TokenConstraint {
    public static live = 0;
    private disposed = false;

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

    public maskLogits(row: Float64Array): void {
        for (let id = 0; id < row.length; id++) if (!this.allows(id)) row[id] = -Infinity;
    }

    public accept(token: number): void {
        if (!this.allows(token)) throw new ConstraintViolationError(`token ${token} may not follow ${this.last}`);
        this.last = token;
    }

    public clone(): TokenConstraint {
        return new ParityConstraint(this.endToken, this.firstForbidden, this.last);
    }

    public dispose(): void {
        if (this.disposed) return;
        this.disposed = true;
        ParityConstraint.live--;
    }
}
