import {InvalidDistributionError} from "../errors.js";

/**
 * |Σp − 1| allowed for a probability row. Float32 softmax over a 152k vocabulary accumulates errors
 * around 1e-5; 1e-4 accepts any honestly normalised row while still catching unnormalised counts,
 * logits passed as probabilities and truncated rows that were not renormalised. Sampling always
 * divides by the row's actual sum, so the tolerance never biases a draw.
 */
export const probabilitySumTolerance = 1e-4;

/** Throws InvalidDistributionError naming `field[index]` for NaN, negative, infinite or unnormalised rows. */
export function validateProbabilityRow(row: ArrayLike<number>, vocabularySize: number, field: string): void {
    if (row.length !== vocabularySize)
        throw new InvalidDistributionError(`has ${row.length} entries, expected the vocabulary size ${vocabularySize}`, field);
    let sum = 0;
    for (let index = 0; index < row.length; index++) {
        const value = row[index];
        if (typeof value !== "number" || Number.isNaN(value))
            throw new InvalidDistributionError(`is not a number (${String(value)})`, `${field}[${index}]`);
        if (value < 0) throw new InvalidDistributionError(`is negative (${value})`, `${field}[${index}]`);
        if (value === Infinity) throw new InvalidDistributionError("is infinite", `${field}[${index}]`);
        sum += value;
    }
    if (Math.abs(sum - 1) > probabilitySumTolerance)
        throw new InvalidDistributionError(`sums to ${sum}, not 1 (tolerance ${probabilitySumTolerance})`, field);
}

/** Throws for NaN or +Infinity logits and for a row with every logit masked; -Infinity is a mask. */
export function validateLogitRow(row: ArrayLike<number>, vocabularySize: number, field: string): void {
    if (row.length !== vocabularySize)
        throw new InvalidDistributionError(`has ${row.length} entries, expected the vocabulary size ${vocabularySize}`, field);
    let finite = 0;
    for (let index = 0; index < row.length; index++) {
        const value = row[index];
        if (typeof value !== "number" || Number.isNaN(value) || value === Infinity)
            throw new InvalidDistributionError(`is not a finite logit or -Infinity (${String(value)})`, `${field}[${index}]`);
        if (value !== -Infinity) finite++;
    }
    if (finite === 0) throw new InvalidDistributionError("every logit is -Infinity: no token can be sampled", field);
}
