import {InvalidInputError} from "../../errors.js";
import {bestGamma, speedupFromCostCurve} from "../../speedup/speedupModel.js";

/** The target's verification cost curve and the draft's per-token time, measured once (milliseconds). */
export interface VerificationCosts {
    /** t_T(k) for k = 1..length: index k − 1 holds one target evaluation of a k-token batch. */
    readonly targetMilliseconds: readonly number[];
    /** t_D: one single-token draft evaluation. */
    readonly draftMilliseconds: number;
}

export interface GammaPrediction {
    /** Predicted speed-up at γ = 1..maxGamma (index γ − 1). */
    readonly speedups: readonly number[];
    /** The γ with the largest predicted speed-up (the smallest such γ on a tie: fewer wasted drafts). */
    readonly bestGamma: number;
    readonly bestSpeedup: number;
}

/**
 * The analytic speed-up (speedupModel.ts) at every γ in 1..maxGamma: S = f_γ(α)·t_T(1) / (γ·t_D + t_T(γ+1)), with the
 * per-position acceptance α held fixed — under strict verification α is a property of the
 * draft/target pair on a group's text, not of γ, so one α̂ predicts every γ.
 */
export function predictGammaSpeedups(alpha: number, maxGamma: number, costs: VerificationCosts): GammaPrediction {
    if (!Number.isInteger(maxGamma) || maxGamma < 1) throw new InvalidInputError(`must be a positive integer, got ${maxGamma}`, "maxGamma");
    if (costs.targetMilliseconds.length < maxGamma + 1)
        throw new InvalidInputError(
            `has t_T(k) up to k = ${costs.targetMilliseconds.length}; γ = ${maxGamma} needs k = ${maxGamma + 1}`,
            "costs.targetMilliseconds"
        );
    const targetTime = (tokens: number) => costs.targetMilliseconds[tokens - 1];
    const speedups = Array.from({length: maxGamma}, (_value, index) =>
        speedupFromCostCurve(alpha, index + 1, {
            targetTimeOne: targetTime(1),
            targetTimeVerify: targetTime(index + 2),
            draftTime: costs.draftMilliseconds
        })
    );
    const best = bestGamma(alpha, maxGamma, targetTime, costs.draftMilliseconds);
    return {speedups, bestGamma: best.gamma, bestSpeedup: best.speedup};
}
