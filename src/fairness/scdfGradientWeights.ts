import {InvalidInputError} from "../errors.js";

export interface ScdfWeights {
    /** D̂_T − D̂_min per task: how far each task sits above the best-served one. */
    readonly excess: number[];
    /** excess / m: the coefficients of ∇θ D̂_T in the Disparate Impacts paper eq. (9), Σ_T weights[T]·∇θ D̂_T. */
    readonly weights: number[];
    /** D̂_min, held constant for this step (Algorithm 1's c). */
    readonly floor: number;
    /** Index of the best-served task (the first on ties); its weight is 0. */
    readonly bestTask: number;
}

/**
 * The per-task weights of one s-CDF step (Disparate Impacts paper Algorithm 1). With D̂_min treated as a constant
 * c, (1/m) Σ (D̂_T − c) ∇D̂_T is the gradient of Û = (1/m) Σ (D̂_T − c)² up to the factor 2, and the
 * best task gets weight 0 — unlike the true gradient of U, whose extra −Σ(D_T − D_min)∇D_min term
 * would reward raising the best task's divergence.
 */
export function scdfGradientWeights(divergences: readonly number[]): ScdfWeights {
    if (divergences.length < 2) throw new InvalidInputError(`needs at least two tasks, got ${divergences.length}`, "divergences");
    divergences.forEach((value, index) => {
        if (!Number.isFinite(value) || value < 0)
            throw new InvalidInputError(`must be a finite non-negative cross-entropy, got ${value}`, `divergences.${index}`);
    });
    const floor = Math.min(...divergences);
    const excess = divergences.map((value) => value - floor);
    return {excess, weights: excess.map((value) => value / divergences.length), floor, bestTask: divergences.indexOf(floor)};
}
