import type {Chance} from "../random/Chance.js";

/** Σ row — needed as the exact normaliser when sampling from a row that is only ≈1 after float32. */
export function sumOf(row: ArrayLike<number>): number {
    let sum = 0;
    for (let index = 0; index < row.length; index++) sum += row[index];
    return sum;
}

/** Draw a token from a probability row. */
export function sampleFromRow(row: ArrayLike<number>, chance: Chance): number {
    return chance.choose(row, sumOf(row));
}

/** Scratch row reused across steps, so a step allocates nothing proportional to V; reallocated only when V changes. */
export class ScratchRow {
    private buffer = new Float64Array(0);

    public get(length: number): Float64Array {
        if (this.buffer.length !== length) this.buffer = new Float64Array(length);
        return this.buffer;
    }
}
