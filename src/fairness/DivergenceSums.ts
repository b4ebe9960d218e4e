import {crossEntropy, klDivergence, overlap, totalVariation} from "../divergences/divergences.js";
import {argmax} from "../distributions/argmax.js";
import {expectedTokensPerStep} from "../speedup/speedupModel.js";

/**
 * Running sums of the per-position quantities of the Disparate Impacts paper over teacher-forced positions, kept as
 * sums (not means) so items can be pooled and bootstrapped exactly. p is the target's next-token
 * distribution, q the draft's, and the data distribution u is one-hot on the reference token.
 */
export interface DivergenceSums {
    positions: number;
    /** Σ min(p, q) = 1 − TV(p, q): the acceptance probability of a token drawn from q. */
    overlap: number;
    /** Σ [argmax p = argmax q]: the acceptance at temperature 0. */
    argmaxAgreement: number;
    /** Σ f_γ(α(s)) at the run's γ: the numerator of the Disparate Impacts paper's S_T = E_{s~T}[f_γ(α(s)) / (1 + γc)] (eq. 4). */
    tokensPerStep: number;
    /** Σ −Σ_x p log q: the Disparate Impacts paper's D_T before averaging. */
    crossEntropy: number;
    kl: number;
    tv: number;
    /** Positions whose next token is a reference token (so the data distribution is known). */
    dataPositions: number;
    /** Σ TV(u, q) = 1 − q(reference): r_q before averaging. */
    draftDataTv: number;
    /** Σ TV(u, p) = 1 − p(reference): r_p before averaging. */
    targetDataTv: number;
}

export function emptyDivergenceSums(): DivergenceSums {
    return {
        positions: 0,
        overlap: 0,
        argmaxAgreement: 0,
        tokensPerStep: 0,
        crossEntropy: 0,
        kl: 0,
        tv: 0,
        dataPositions: 0,
        draftDataTv: 0,
        targetDataTv: 0
    };
}

/**
 * Adds one position: target row p, draft row q, the speculative width γ of the run (for f_γ(α(s))),
 * and the data token when a reference supplies it.
 */
export function addPosition(sums: DivergenceSums, p: ArrayLike<number>, q: ArrayLike<number>, gamma: number, dataToken?: number): void {
    const alpha = overlap(p, q);
    sums.positions++;
    sums.overlap += alpha;
    // Rounding can put Σ min(p, q) a hair above 1; f_γ is defined on [0, 1].
    sums.tokensPerStep += expectedTokensPerStep(Math.min(1, Math.max(0, alpha)), gamma);
    sums.argmaxAgreement += argmax(p) === argmax(q) ? 1 : 0;
    sums.crossEntropy += crossEntropy(p, q);
    sums.kl += klDivergence(p, q);
    sums.tv += totalVariation(p, q);
    if (dataToken !== undefined) {
        // TV between a row and a one-hot on x is ½[(1 − r_x) + Σ_{y≠x} r_y] = 1 − r_x.
        sums.dataPositions++;
        sums.draftDataTv += 1 - q[dataToken];
        sums.targetDataTv += 1 - p[dataToken];
    }
}

export function mergeDivergenceSums(parts: readonly DivergenceSums[]): DivergenceSums {
    const total = emptyDivergenceSums();
    for (const part of parts) for (const key of Object.keys(total) as Array<keyof DivergenceSums>) total[key] += part[key];
    return total;
}

export interface DivergenceMeans {
    readonly positions: number;
    readonly alpha: number;
    readonly argmaxAgreement: number;
    /** E_{s~T}[f_γ(α(s))]: expected tokens per target call, position by position (not f_γ of the mean α). */
    readonly tokensPerStep: number;
    /** D_T. */
    readonly crossEntropy: number;
    readonly kl: number;
    readonly tv: number;
    /** Drafter fitness 1 − r_q; null without reference tokens. */
    readonly fitness: number | null;
    /** Target misfit r_p (the slack of the Disparate Impacts paper Theorem 2); null without reference tokens. */
    readonly targetMisfit: number | null;
}

/** Position-weighted means (E_{s~T}); NaN everywhere for zero positions. */
export function meanDivergences(sums: DivergenceSums): DivergenceMeans {
    const mean = (value: number) => value / sums.positions;
    const hasData = sums.dataPositions > 0;
    return {
        positions: sums.positions,
        alpha: mean(sums.overlap),
        argmaxAgreement: mean(sums.argmaxAgreement),
        tokensPerStep: mean(sums.tokensPerStep),
        crossEntropy: mean(sums.crossEntropy),
        kl: mean(sums.kl),
        tv: mean(sums.tv),
        fitness: hasData ? 1 - sums.draftDataTv / sums.dataPositions : null,
        targetMisfit: hasData ? sums.targetDataTv / sums.dataPositions : null
    };
}
