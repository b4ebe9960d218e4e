import {InvalidInputError} from "../errors.js";

/**
 * The Disparate Impacts paper Definition 1: U = (1/m) Σ_T (D_T − D_min)², D_min = min_T D_T — the mean squared excess
 * cross-entropy of each task over the best-served one. 0 when every task is served alike.
 */
export function unfairness(divergences: readonly number[]): number {
    if (divergences.length === 0) throw new InvalidInputError("needs at least one task", "divergences");
    divergences.forEach((value, index) => {
        if (Number.isNaN(value) || value < 0)
            throw new InvalidInputError(`must be a non-negative cross-entropy, got ${value}`, `divergences.${index}`);
    });
    const minimum = Math.min(...divergences);
    // An infinite D_min means every task is infinitely misfit: no excess to measure.
    if (minimum === Infinity) return 0;
    return divergences.reduce((sum, value) => sum + (value - minimum) ** 2, 0) / divergences.length;
}
