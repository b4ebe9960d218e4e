import normalCdf from "@stdlib/stats-base-dists-normal-cdf";
import normalQuantile from "@stdlib/stats-base-dists-normal-quantile";

import {InvalidInputError} from "../errors.js";

/** Result of a two one-sided tests (TOST) equivalence procedure on a difference of proportions. */
export interface TostResult {
    /** Observed difference, speculative minus target, in proportion units. */
    readonly difference: number;
    readonly standardError: number;
    readonly margin: number;
    readonly alpha: number;
    /** p-value of H0: difference ≤ −margin; null when the standard error is zero. */
    readonly pLower: number | null;
    /** p-value of H0: difference ≥ +margin; null when the standard error is zero. */
    readonly pUpper: number | null;
    /** The larger of the two one-sided p-values: the TOST p-value. */
    readonly p: number | null;
    /** The 1 − 2α confidence interval of the difference; equivalence holds iff it lies inside ±margin. */
    readonly confidenceInterval: {readonly lower: number; readonly upper: number; readonly level: number};
    /** Both one-sided tests reject at α. Always false when degenerate. */
    readonly equivalent: boolean;
    /**
     * The standard error is zero (for example both arms at 0 or both at 1), so the normal
     * approximation has no spread and cannot test anything. TAIS flags such contrasts instead of
     * failing them (TAIS paper §4.5).
     */
    readonly degenerate: boolean;
}

/**
 * TOST on a normally approximated difference with a known standard error. Shared by the unpaired
 * (Wald) and paired TOST so both use identical tail and interval arithmetic.
 */
export function tostFromStandardError(difference: number, standardError: number, margin: number, alpha: number): TostResult {
    if (!Number.isFinite(difference)) {
        throw new InvalidInputError(`must be finite, got ${difference}`, "difference");
    }
    if (!(standardError >= 0) || !Number.isFinite(standardError)) {
        throw new InvalidInputError(`must be finite and non-negative, got ${standardError}`, "standardError");
    }
    if (!(margin > 0 && margin < 1)) {
        throw new InvalidInputError(`must lie strictly between 0 and 1 (proportion units), got ${margin}`, "margin");
    }
    if (!(alpha > 0 && alpha < 0.5)) {
        throw new InvalidInputError(`must lie strictly between 0 and 0.5, got ${alpha}`, "alpha");
    }
    const level = 1 - 2 * alpha;
    if (standardError === 0) {
        return {
            difference,
            standardError,
            margin,
            alpha,
            pLower: null,
            pUpper: null,
            p: null,
            confidenceInterval: {lower: difference, upper: difference, level},
            equivalent: false,
            degenerate: true
        };
    }
    const pLower = 1 - normalCdf((difference + margin) / standardError, 0, 1);
    const pUpper = normalCdf((difference - margin) / standardError, 0, 1);
    const z = normalQuantile(1 - alpha, 0, 1);
    return {
        difference,
        standardError,
        margin,
        alpha,
        pLower,
        pUpper,
        p: Math.max(pLower, pUpper),
        confidenceInterval: {lower: difference - z * standardError, upper: difference + z * standardError, level},
        equivalent: pLower < alpha && pUpper < alpha,
        degenerate: false
    };
}
