/**
 * The cost of a shared step as bench/gammaAutoReplay.ts charges it, fitted to the step costs
 * bench/gammaAutoRecord.ts measured at one number of batched sequences.
 *
 * llama.cpp decodes a batch in one pass over the weights when the KV cache is one unified buffer
 * (serve's layout up to 4 sequences). With one KV stream per sequence (above 4) it splits a batch into
 * ubatches in which every sequence has equally many tokens: a step whose sequences bring 1, 1, 5
 * tokens costs a pass of three sequences × 1 token and one of one sequence × 4. Each pass costs
 * a + b · tokens + c · sequences (ms), the three fitted by least absolute deviations (a busy machine's
 * slow samples move them little) to every measured step, uniform and mixed alike, split into passes
 * that way. A step of another shape than the step before also pays `rebuild` ms (llama.cpp reuses a
 * compute graph only for a batch of the same shape), measured as a step right after another shape
 * less the same step repeated; 0 where the recording has no such points.
 */
export interface CostPoint {
    readonly lengths: readonly number[];
    readonly milliseconds: number;
    readonly alternating?: {readonly after: readonly number[]; readonly milliseconds: number};
}

export interface PassCost {
    readonly base: number;
    readonly perToken: number;
    readonly perSequence: number;
}

export class StepCostModel {
    private previousShape = "";

    public constructor(
        public readonly pass: PassCost,
        public readonly unified: boolean,
        public readonly rebuild: number
    ) {}

    public static fit(points: readonly CostPoint[], unified: boolean): StepCostModel {
        const rows = points.map((point) => ({features: passFeatures(point.lengths, unified), milliseconds: point.milliseconds}));
        const pass = leastAbsoluteDeviations(rows);
        const rebuilds = points.flatMap((point) =>
            point.alternating === undefined ? [] : [point.alternating.milliseconds - point.milliseconds]
        );
        const rebuild = rebuilds.length === 0 ? 0 : Math.max(0, rebuilds.sort((a, b) => a - b)[rebuilds.length >> 1]);
        return new StepCostModel(pass, unified, rebuild);
    }

    /** The model's cost of a step of `lengths` tokens per sequence (zeros: not in the step), without a rebuild. */
    public predict(lengths: readonly number[]): number {
        const [passes, tokens, sequences] = passFeatures(lengths, this.unified);
        return passes * this.pass.base + tokens * this.pass.perToken + sequences * this.pass.perSequence;
    }

    /** The cost of the next step of the replay: predict, plus a rebuild where its shape differs from the step before. */
    public charge(lengths: readonly number[]): number {
        const shape = lengths
            .filter((length) => length > 0)
            .sort((a, b) => a - b)
            .join(",");
        const rebuild = shape !== this.previousShape && this.previousShape !== "" ? this.rebuild : 0;
        this.previousShape = shape;
        return this.predict(lengths) + rebuild;
    }

    /** Median relative error of the fit over `points`. */
    public medianError(points: readonly CostPoint[]): number {
        const errors = points.map((point) => Math.abs(this.predict(point.lengths) / point.milliseconds - 1)).sort((a, b) => a - b);
        return errors[errors.length >> 1];
    }
}

/** [passes, tokens, Σ sequences over passes] of a step: one pass when unified, else the ubatches of equal lengths. */
export function passFeatures(lengths: readonly number[], unified: boolean): [number, number, number] {
    const live = lengths.filter((length) => length > 0).sort((a, b) => a - b);
    const tokens = live.reduce((sum, length) => sum + length, 0);
    if (live.length === 0) return [0, 0, 0];
    if (unified) return [1, tokens, live.length];
    let passes = 0;
    let sequences = 0;
    let done = 0;
    for (let index = 0; index < live.length; index++) {
        if (live[index] === done) continue;
        passes++;
        sequences += live.length - index;
        done = live[index];
    }
    return [passes, tokens, sequences];
}

/** Non-negative a, b, c minimising Σ |a·x0 + b·x1 + c·x2 − y| (iteratively reweighted least squares). */
function leastAbsoluteDeviations(rows: ReadonlyArray<{features: readonly number[]; milliseconds: number}>): PassCost {
    let weights = rows.map(() => 1);
    let solution = [0, 0, 0];
    for (let iteration = 0; iteration < 50; iteration++) {
        solution = nonNegativeLeastSquares(rows, weights);
        weights = rows.map((row) => 1 / Math.max(1e-3, Math.abs(dot(solution, row.features) - row.milliseconds)));
    }
    return {base: solution[0], perToken: solution[1], perSequence: solution[2]};
}

/** Weighted least squares in three unknowns, a coefficient that comes out negative dropped (set to 0) and the rest refitted. */
function nonNegativeLeastSquares(
    rows: ReadonlyArray<{features: readonly number[]; milliseconds: number}>,
    weights: readonly number[]
): number[] {
    let active = [0, 1, 2];
    for (;;) {
        const size = active.length;
        const matrix = Array.from({length: size}, () => new Array<number>(size + 1).fill(0));
        rows.forEach((row, index) => {
            for (let i = 0; i < size; i++) {
                for (let j = 0; j < size; j++) matrix[i][j] += weights[index] * row.features[active[i]] * row.features[active[j]];
                matrix[i][size] += weights[index] * row.features[active[i]] * row.milliseconds;
            }
        });
        const solved = solve(matrix);
        const negative = solved.findIndex((value) => !(value >= 0));
        if (negative < 0) {
            const solution = [0, 0, 0];
            active.forEach((feature, index) => (solution[feature] = solved[index]));
            return solution;
        }
        active = active.filter((_feature, index) => index !== negative);
        if (active.length === 0) return [0, 0, 0];
    }
}

/** Gaussian elimination with partial pivoting on an augmented matrix. */
function solve(matrix: number[][]): number[] {
    const size = matrix.length;
    for (let column = 0; column < size; column++) {
        let pivot = column;
        for (let row = column + 1; row < size; row++) if (Math.abs(matrix[row][column]) > Math.abs(matrix[pivot][column])) pivot = row;
        [matrix[column], matrix[pivot]] = [matrix[pivot], matrix[column]];
        if (Math.abs(matrix[column][column]) < 1e-12) return new Array<number>(size).fill(Number.NaN);
        for (let row = 0; row < size; row++) {
            if (row === column) continue;
            const factor = matrix[row][column] / matrix[column][column];
            for (let k = column; k <= size; k++) matrix[row][k] -= factor * matrix[column][k];
        }
    }
    return matrix.map((row, index) => row[size] / row[index]);
}

function dot(a: readonly number[], b: readonly number[]): number {
    return a.reduce((sum, value, index) => sum + value * b[index], 0);
}
