import {InvalidInputError} from "../errors.js";

/**
 * Holm–Bonferroni step-down adjusted p-values (Holm 1979), in the input order. The i-th smallest
 * p-value is multiplied by (m − i + 1), a running maximum keeps the adjusted values monotone in
 * the sorted order, and values are capped at 1; rejecting where adjusted < α is Holm's procedure.
 */
export function holmAdjust(pValues: readonly number[]): number[] {
    pValues.forEach((value, index) => {
        if (!(value >= 0 && value <= 1)) {
            throw new InvalidInputError(`must be a p-value in [0, 1], got ${value}`, `pValues[${index}]`);
        }
    });
    const count = pValues.length;
    const order = pValues.map((_, index) => index).sort((left, right) => pValues[left] - pValues[right]);
    const adjusted = new Array<number>(count);
    let runningMaximum = 0;
    order.forEach((originalIndex, rank) => {
        runningMaximum = Math.max(runningMaximum, Math.min(1, (count - rank) * pValues[originalIndex]));
        adjusted[originalIndex] = runningMaximum;
    });
    return adjusted;
}
