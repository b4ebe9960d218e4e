import type {ArgmaxCapableSequence, BackendSequence, EvaluateOptions} from "../backend/ModelBackend.js";

/**
 * A target sequence whose evaluateArgmax answers with ids drawn on the device (deviceDrawPath): the
 * rows it reads and the token drafted after each, and everything but evaluateArgmax delegated to
 * the sequence it wraps.
 */
export abstract class DrawingIdSource<Inner extends BackendSequence> implements ArgmaxCapableSequence {
    protected constructor(protected readonly inner: Inner) {}

    public get tokens(): readonly number[] {
        return this.inner.tokens;
    }

    public get timings() {
        return this.inner.timings;
    }

    public abstract evaluateArgmax(tokens: readonly number[], evaluateOptions?: EvaluateOptions): Promise<number[]>;

    public evaluate(tokens: readonly number[], options?: EvaluateOptions): Promise<Float64Array[]> {
        return this.inner.evaluate(tokens, options);
    }

    public rollback(count: number): Promise<void> {
        return this.inner.rollback(count);
    }

    public clear(): Promise<void> {
        return this.inner.clear();
    }

    public dispose(): Promise<void> {
        return this.inner.dispose();
    }
}

/** The batch positions an evaluation reads (the last by default), and per position the token drafted after it (−1: none). */
export function readRows(tokens: readonly number[], evaluateOptions: EvaluateOptions): {positions: readonly number[]; drafted: number[]} {
    const positions = evaluateOptions.positions ?? [tokens.length - 1];
    const drafted = positions.map((position) => (position + 1 < tokens.length ? tokens[position + 1]! : -1));
    return {positions, drafted};
}
