import {InvalidInputError} from "../errors.js";

/**
 * The analytic limit every benchmark is compared with ("Fast Inference from Transformers via
 * Speculative Decoding"; the Disparate Impacts paper §3). α is the per-position acceptance probability Σ min(p, q) = 1 − TV(p, q).
 */

function checkAlpha(alpha: number, field = "alpha"): void {
    if (!(alpha >= 0 && alpha <= 1)) throw new InvalidInputError(`must be in [0, 1], got ${alpha}`, field);
}

function checkGamma(gamma: number): void {
    if (!Number.isInteger(gamma) || gamma < 0) throw new InvalidInputError(`must be a non-negative integer, got ${gamma}`, "gamma");
}

/**
 * f_γ(α) = (1 − α^{γ+1}) / (1 − α): expected tokens emitted per target call (accepted drafts plus
 * the recovered or bonus token) when each position is accepted independently with probability α.
 * At α = 1 the limit γ + 1.
 */
export function expectedTokensPerStep(alpha: number, gamma: number): number {
    checkAlpha(alpha);
    checkGamma(gamma);
    if (alpha === 1) return gamma + 1;
    return (1 - alpha ** (gamma + 1)) / (1 - alpha);
}

/** The same expectation with a different α per position: 1 + Σ_{k=1..γ} Π_{i≤k} α_i. */
export function expectedTokensPerStepFromPositions(alphas: readonly number[]): number {
    let expected = 1;
    let reach = 1;
    alphas.forEach((alpha, index) => {
        checkAlpha(alpha, `alphas.${index}`);
        reach *= alpha;
        expected += reach;
    });
    return expected;
}

/** Expected accepted draft tokens per step (not counting the final token): f_γ(α) − 1. */
export function expectedAcceptedPerStep(alpha: number, gamma: number): number {
    return expectedTokensPerStep(alpha, gamma) - 1;
}

/**
 * S(α, γ, c) = f_γ(α) / (1 + γ·c), c = draft step time / target step time. Assumes verifying γ+1
 * tokens costs one target step — true when the target is memory-bound, false for small CPU models.
 */
export function speedupFromCostRatio(alpha: number, gamma: number, costRatio: number): number {
    if (!(costRatio >= 0)) throw new InvalidInputError(`must be ≥ 0, got ${costRatio}`, "costRatio");
    return expectedTokensPerStep(alpha, gamma) / (1 + gamma * costRatio);
}

/** Measured costs: t_target(k) for a k-token verification batch and t_draft for one draft token. */
export interface CostCurve {
    /** Seconds (any unit) for one target evaluation of 1 token. */
    readonly targetTimeOne: number;
    /** Seconds for one target evaluation of γ+1 tokens in one batch. */
    readonly targetTimeVerify: number;
    /** Seconds for one draft token. */
    readonly draftTime: number;
}

/** S = f_γ(α) · t_target(1) / (γ·t_draft + t_target(γ+1)): the limit with the real cost curve. */
export function speedupFromCostCurve(alpha: number, gamma: number, cost: CostCurve): number {
    for (const [field, value] of Object.entries(cost))
        if (!(value > 0) || !Number.isFinite(value)) throw new InvalidInputError(`must be a positive finite time, got ${value}`, field);
    return (expectedTokensPerStep(alpha, gamma) * cost.targetTimeOne) / (gamma * cost.draftTime + cost.targetTimeVerify);
}

/** The γ in [1, maxGamma] that maximises the cost-curve speed-up; `targetTime(k)` gives t_target(k). */
export function bestGamma(
    alpha: number,
    maxGamma: number,
    targetTime: (tokens: number) => number,
    draftTime: number
): {gamma: number; speedup: number} {
    let best = {gamma: 1, speedup: -Infinity};
    for (let gamma = 1; gamma <= maxGamma; gamma++) {
        const speedup = speedupFromCostCurve(alpha, gamma, {
            targetTimeOne: targetTime(1),
            targetTimeVerify: targetTime(gamma + 1),
            draftTime
        });
        if (speedup > best.speedup) best = {gamma, speedup};
    }
    return best;
}

/**
 * FSD's sequence-level bound (Fuzzy SD paper §4.2): Div(P_target, P_FSD) over N tokens ≤ N · %draft · T,
 * %draft the fraction of emitted tokens that came from the draft, T the per-token threshold.
 */
export function fsdSequenceBound(sequenceLength: number, draftFraction: number, threshold: number): number {
    if (!Number.isInteger(sequenceLength) || sequenceLength < 0)
        throw new InvalidInputError(`must be a non-negative integer, got ${sequenceLength}`, "sequenceLength");
    checkAlpha(draftFraction, "draftFraction");
    if (!(threshold >= 0)) throw new InvalidInputError(`must be ≥ 0, got ${threshold}`, "threshold");
    return sequenceLength * draftFraction * threshold;
}
