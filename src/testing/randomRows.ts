import {Random} from "../random/Random.js";

/**
 * Test helper: a seeded probability row of size V with some exact zeros, so edge cases
 * (p(x) = 0, q(x) = 0, disjoint supports) appear without being hand-built every time.
 */
export function randomProbabilityRow(random: Random, vocabularySize: number, zeroFraction = 0.2): Float64Array {
    const row = new Float64Array(vocabularySize);
    let sum = 0;
    for (let index = 0; index < vocabularySize; index++) {
        const value = random.nextDouble() < zeroFraction ? 0 : -Math.log(1 - random.nextDouble());
        row[index] = value;
        sum += value;
    }
    if (sum === 0) {
        row[Math.floor(random.nextDouble() * vocabularySize)] = 1;
        return row;
    }
    for (let index = 0; index < vocabularySize; index++) row[index] /= sum;
    return row;
}

export function rowsOf(values: number[][]): Float64Array[] {
    return values.map((row) => Float64Array.from(row));
}
