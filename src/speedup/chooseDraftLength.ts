import {InvalidInputError} from "../errors.js";
import {expectedTokensPerStep} from "./speedupModel.js";

/** What the choice of one sequence's next draft length weighs (times in any one unit). */
export interface DraftLengthChoiceInput {
    /** The sequence's acceptance estimate, per draft position. */
    readonly alpha: number;
    /** Longest draft allowed. */
    readonly maxLength: number;
    /** Target tokens each draft position adds to the step (1 for a chain, the width for a token tree). */
    readonly tokensPerPosition: number;
    /** Time to draft one position. */
    readonly draftTime: number;
    /** Time of one target step decoding this many tokens (the whole batch, every sequence's together); taken as non-decreasing. */
    readonly stepTime: (tokens: number) => number;
    /** Time a step costs besides drafting and the target call (verification, rollback, bookkeeping). */
    readonly overheadTime?: number;
    /** Target tokens the other sequences of fixed draft length put into the same step. */
    readonly otherTokens?: number;
    /** Tokens those sequences are expected to emit from that step. */
    readonly otherYield?: number;
    /**
     * Other sequences in the step that choose by the same rule: each is assumed to choose the same
     * length, so their drafts are drafted in the same batched calls and verified in the same step.
     */
    readonly mirrors?: number;
    /** The acceptance of each of those `mirrors` sequences (default: `alpha` for each): the batch's yield adds theirs. */
    readonly mirrorAlphas?: readonly number[];
    /**
     * What drafting at all costs first, per token the step is expected to emit (a draft model reading the
     * tokens emitted while it did not draft, spread over the tokens still to come); charged to lengths
     * above 0. Default 0.
     */
    readonly resumeTimePerToken?: number;
}

export interface DraftLengthChoice {
    readonly length: number;
    /** Predicted tokens per unit time of the batch at that length. */
    readonly rate: number;
    /** The predicted rate of every length 0..maxLength. */
    readonly rates: readonly number[];
    /** The batch's expected tokens from the step at every length 0..maxLength. */
    readonly yields: readonly number[];
    /** The predicted time of the step at every length, and the part of it that is resuming (resumeTimePerToken's). */
    readonly times: readonly number[];
    readonly resumeTimes: readonly number[];
}

/**
 * The draft length k in 0..maxLength that maximises predicted tokens per unit time of the step this
 * sequence joins: (Y + Σ_j f_k(α_j)) / (k·t_draft + t(B + n·(1 + w·k)) + overhead), f_k(α) = (1 − α^{k+1}) /
 * (1 − α) the expected tokens of a k-token draft, n = 1 + mirrors the sequences choosing by this rule
 * (assumed to choose alike: their drafts share batched draft calls), α_j each one's acceptance, B and Y the tokens and expected
 * yield of the fixed-length sequences in the same step, w the target tokens per draft position. With
 * nothing else in the batch it is the sequence's own speed-up; in a long compute-bound batch a draft
 * token costs about a generated token's share of the step and pays only with high acceptance, so
 * k = 0 (no speculation) wins. A draft of any length k > 0 may first cost a catch-up (resumeTimePerToken
 * per emitted token), which is what keeps speculation off where resuming costs more than it would gain
 * over the tokens still to come. Ties go to the shorter draft.
 */
export function chooseDraftLength(input: DraftLengthChoiceInput): DraftLengthChoice {
    const {alpha, maxLength, tokensPerPosition, draftTime, stepTime} = input;
    if (!(alpha >= 0 && alpha <= 1)) throw new InvalidInputError(`must be in [0, 1], got ${alpha}`, "alpha");
    if (!Number.isInteger(maxLength) || maxLength < 0)
        throw new InvalidInputError(`must be a non-negative integer, got ${maxLength}`, "maxLength");
    const otherTokens = input.otherTokens ?? 0;
    const otherYield = input.otherYield ?? 0;
    const mirrorAlphas = input.mirrorAlphas ?? new Array<number>(input.mirrors ?? 0).fill(alpha);
    const sequences = 1 + mirrorAlphas.length;
    mirrorAlphas.forEach((mirror, index) => {
        if (!(mirror >= 0 && mirror <= 1)) throw new InvalidInputError(`must be in [0, 1], got ${mirror}`, `mirrorAlphas.${index}`);
    });
    const overhead = input.overheadTime ?? 0;
    const resume = input.resumeTimePerToken ?? 0;
    const rates: number[] = [];
    const yieldsByLength: number[] = [];
    const times: number[] = [];
    const resumeTimes: number[] = [];
    let best = {length: 0, rate: -Infinity};
    // A measured curve may dip between noisy sizes; more tokens never make a step cheaper.
    let step = 0;
    for (let length = 0; length <= maxLength; length++) {
        step = Math.max(step, stepTime(otherTokens + sequences * (1 + tokensPerPosition * length)));
        const yields = mirrorAlphas.reduce(
            (sum, mirror) => sum + expectedTokensPerStep(mirror, length),
            expectedTokensPerStep(alpha, length)
        );
        const resumeTime = length > 0 ? resume * (otherYield + yields) : 0;
        const time = length * draftTime + step + overhead + resumeTime;
        const rate = (otherYield + yields) / Math.max(time, Number.MIN_VALUE);
        rates.push(rate);
        yieldsByLength.push(otherYield + yields);
        times.push(time);
        resumeTimes.push(resumeTime);
        if (rate > best.rate * (1 + 1e-9)) best = {length, rate};
    }
    return {...best, rates, yields: yieldsByLength, times, resumeTimes};
}
