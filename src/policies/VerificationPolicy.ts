import type {Chance} from "../random/Chance.js";

/**
 * One speculative step as a verification policy sees it. Rows are probability distributions over
 * the same vocabulary of size V. All rows are AFTER the sampler settings (temperature, top-k, …);
 * raw logits are passed separately for policies that work on them (FSD divergences on the
 * unwarped softmax, CSD's logit-space gate).
 */
export interface VerificationStep {
    /** γ proposed token ids (γ may be 0: then the step just emits a bonus token). */
    readonly draftTokens: ArrayLike<number>;
    /** γ+1 target rows: position i verifies draftTokens[i]; row γ gives the bonus token. */
    readonly targetProbs: readonly Float64Array[];
    /** γ draft rows the draft tokens were drawn from; absent for n-gram / prompt-lookup drafts. */
    readonly draftProbs?: readonly Float64Array[];
    /** γ+1 raw target logits (before temperature and truncation). */
    readonly targetLogits?: readonly Float64Array[];
    /** γ raw draft logits. */
    readonly draftLogits?: readonly Float64Array[];
    /**
     * γ+1 target argmax ids, when the backend returned only those (greedy decoding without logit
     * transfer). Only the greedy policy reads them; targetProbs may then be empty.
     */
    readonly targetArgmax?: readonly number[];
}

/** How the token that ends a step was chosen. */
export type FinalTokenSource =
    | "bonus" // every draft accepted; sampled (or argmax) from target row γ
    | "residual" // lossless recovery: sampled from norm(max(p − q, 0))
    | "target-argmax" // greedy / typical recovery
    | "target-sample"; // drawn from the target row itself (match, fuzzy, random)

/** Why one draft position was accepted or rejected, with the quantities that were compared. */
export interface PositionDiagnostic {
    readonly position: number;
    readonly draftToken: number;
    readonly accepted: boolean;
    readonly reason: string;
    readonly values: Readonly<Record<string, number>>;
}

export interface VerificationResult {
    /** Number of leading draft tokens accepted (0..γ), not counting the final token. */
    readonly acceptedCount: number;
    /** Accepted prefix followed by exactly one recovered/replacement/bonus token: 1..γ+1 ids. */
    readonly emitted: number[];
    readonly finalTokenSource: FinalTokenSource;
    /** One entry per examined position (stops after the first rejection). */
    readonly positions: PositionDiagnostic[];
}

export interface VerificationPolicy {
    readonly kind: string;
    /** True when the emitted tokens are distributed exactly as target-only sampling. */
    readonly lossless: boolean;
    /**
     * False: verify never reads step.targetLogits, so the engine may leave them out (a native backend
     * then hands over the sampler rows alone). Absent or true: they are passed.
     */
    readonly readsTargetLogits?: boolean;
    /**
     * True: verify keeps no reference to the step's rows once it returns, so the engine may reuse their
     * memory for the next step's rows. Absent or false: every step gets fresh rows.
     */
    readonly releasesRows?: boolean;
    /** Decide one step. Deterministic given the step and the decisions `chance` returns. */
    verify(step: VerificationStep, chance: Chance): VerificationResult;
}
