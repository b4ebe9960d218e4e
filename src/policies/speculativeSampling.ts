import type {Chance} from "../random/Chance.js";
import {ScratchRow, sampleFromRow} from "./rowOperations.js";
import {verifyLeftToRight} from "./verifyLeftToRight.js";
import type {VerificationResult, VerificationStep} from "./VerificationPolicy.js";

/** A second chance for a draft token the lossless rule rejected (the Calibrated SD paper's rescue). */
export type RescueRule = (
    step: VerificationStep,
    position: number,
    draftToken: number,
    recoveredToken: number
) => {rescued: boolean; reason: string; values: Record<string, number>};

/**
 * Lossless speculative sampling ("Fast Inference from Transformers via Speculative Decoding";
 * "Accelerating Large Language Model Decoding with Speculative Sampling"), the core of `strict`,
 * `calibrated` and `lossy`.
 *
 * Accept draft x with probability min(1, p(x)/q(x)). At the first rejection emit one token from the
 * residual norm(max(p − q, 0)) and stop; if all γ are accepted, emit a bonus token from p at row γ.
 * Without a rescue rule the output is distributed exactly as p (proved by enumeration in the tests).
 *
 * Draft tokens without a draft distribution (n-gram / prompt-lookup) are treated as q = δ_x, as vLLM
 * does: accept with probability p(x); the residual is p with x removed. A draft token with q(x) = 0
 * cannot have been drawn from q and is rejected (vLLM v1).
 *
 * With a rescue rule, each rejection first draws the recovered token t as usual, then the rule may
 * keep x instead (the Calibrated SD paper, Algorithm 1). A masked token (raw logit −∞, or probability 0 when no
 * logits are given) is never rescued. Truncation by top-k/top-p/min-p does not block a rescue: at
 * temperature 0 the sampler row is one-hot and would forbid every rescue, and the paper's gate is
 * defined on raw logits precisely to be temperature invariant.
 */
export function verifySpeculativeSampling(
    step: VerificationStep,
    chance: Chance,
    residual: ScratchRow,
    rescue?: RescueRule
): VerificationResult {
    return verifyLeftToRight(
        step,
        (position, draftToken) => {
            const target = step.targetProbs[position];
            const draft = step.draftProbs?.[position];
            const targetProbability = target[draftToken];
            const draftProbability = draft == null ? 1 : draft[draftToken];
            const acceptProbability = draftProbability > 0 ? Math.min(1, targetProbability / draftProbability) : 0;
            const values = {targetProbability, draftProbability, acceptProbability};
            if (acceptProbability > 0 && chance.accept(acceptProbability)) return {accepted: true, reason: "ratio-accepted", values};
            const recoveredToken = sampleResidual(target, draft, draftToken, residual.get(target.length), chance);
            const rescuable =
                rescue != null && (step.targetLogits == null ? targetProbability > 0 : step.targetLogits[position][draftToken] > -Infinity);
            const decision = rescuable
                ? rescue!(step, position, draftToken, recoveredToken)
                : {rescued: false, reason: draftProbability > 0 ? "ratio-rejected" : "draft-probability-zero", values: {}};
            return {
                accepted: decision.rescued,
                reason: decision.reason,
                values: {...values, recoveredToken, ...decision.values},
                replacement: recoveredToken
            };
        },
        "residual",
        () => sampleFromRow(step.targetProbs[step.draftTokens.length], chance)
    );
}

/**
 * One pass builds max(p − q, 0) (or p without x when there is no q) and its mass; one draw.
 * O(V), no allocation. If rounding leaves no residual mass (p ≈ q to the last bit), fall back to p.
 */
export function sampleResidual(
    target: Float64Array,
    draft: Float64Array | undefined,
    draftToken: number,
    scratch: Float64Array,
    chance: Chance
): number {
    let mass = 0;
    if (draft == null) {
        scratch.set(target);
        scratch[draftToken] = 0;
        for (let index = 0; index < scratch.length; index++) mass += scratch[index];
    } else {
        for (let index = 0; index < target.length; index++) {
            const difference = target[index] - draft[index];
            const value = difference > 0 ? difference : 0;
            scratch[index] = value;
            mass += value;
        }
    }
    if (mass > 0) return chance.choose(scratch, mass);
    return sampleFromRow(target, chance);
}
