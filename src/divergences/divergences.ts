/**
 * Divergences and overlaps between two distributions over the same vocabulary, natural log.
 * Convention for zero entries: 0·log(0/x) = 0; a·log(a/0) = +Infinity for a > 0. No epsilon is
 * added anywhere, so the values are the textbook ones (the FSD reference code also uses none).
 * All functions take an optional `length` so callers can pass reused, larger scratch buffers.
 */

/** KL(from ‖ to) = Σ from·log(from/to). */
export function klDivergence(from: ArrayLike<number>, to: ArrayLike<number>, length: number = from.length): number {
    let sum = 0;
    for (let index = 0; index < length; index++) {
        const a = from[index];
        if (a > 0) {
            const b = to[index];
            if (b <= 0) return Infinity;
            sum += a * Math.log(a / b);
        }
    }
    // Rounding can make a true 0 come out as −1e-17; a divergence is never negative.
    return sum > 0 ? sum : 0;
}

/** Textbook Jensen–Shannon: ½KL(p‖m) + ½KL(q‖m), m = (p+q)/2. Symmetric, bounded by ln 2. */
export function jensenShannon(p: ArrayLike<number>, q: ArrayLike<number>, length: number = p.length): number {
    let sum = 0;
    for (let index = 0; index < length; index++) {
        const a = p[index];
        const b = q[index];
        const m = 0.5 * (a + b);
        if (a > 0) sum += a * Math.log(a / m);
        if (b > 0) sum += b * Math.log(b / m);
    }
    const value = 0.5 * sum;
    return value > 0 ? value : 0;
}

/**
 * The FSD reference code's "JS": ½KL(m‖p) + ½KL(m‖q) with m = (p+q)/2 — the mixture in the FIRST
 * argument, unlike textbook JS. Not bounded by ln 2 (infinite when the supports differ). Kept under
 * its own name only to reproduce that code's thresholds; prefer `jensenShannon`.
 */
export function fsdReferenceJensenShannon(p: ArrayLike<number>, q: ArrayLike<number>, length: number = p.length): number {
    let sum = 0;
    for (let index = 0; index < length; index++) {
        const a = p[index];
        const b = q[index];
        const m = 0.5 * (a + b);
        if (m > 0) {
            if (a <= 0 || b <= 0) return Infinity;
            sum += m * Math.log(m / a) + m * Math.log(m / b);
        }
    }
    const value = 0.5 * sum;
    return value > 0 ? value : 0;
}

/** Total variation ½Σ|p − q|, in [0, 1]. Equals 1 − overlap(p, q) for normalised rows. */
export function totalVariation(p: ArrayLike<number>, q: ArrayLike<number>, length: number = p.length): number {
    let sum = 0;
    for (let index = 0; index < length; index++) sum += Math.abs(p[index] - q[index]);
    return 0.5 * sum;
}

/** Cross-entropy H(p, q) = −Σ p·log q (Disparate Impacts paper's D_T uses p = target, q = draft). */
export function crossEntropy(p: ArrayLike<number>, q: ArrayLike<number>, length: number = p.length): number {
    let sum = 0;
    for (let index = 0; index < length; index++) {
        const a = p[index];
        if (a > 0) {
            const b = q[index];
            if (b <= 0) return Infinity;
            sum -= a * Math.log(b);
        }
    }
    return sum;
}

/** Shannon entropy −Σ p·log p. */
export function entropy(p: ArrayLike<number>, length: number = p.length): number {
    let sum = 0;
    for (let index = 0; index < length; index++) {
        const a = p[index];
        if (a > 0) sum -= a * Math.log(a);
    }
    return sum;
}

/** α = Σ min(p, q): the probability that rejection sampling accepts a draft token drawn from q. */
export function overlap(p: ArrayLike<number>, q: ArrayLike<number>, length: number = p.length): number {
    let sum = 0;
    for (let index = 0; index < length; index++) sum += Math.min(p[index], q[index]);
    return sum;
}
