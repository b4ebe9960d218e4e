import {type DivergenceKind, divergenceByKind} from "../divergences/DivergenceKind.js";
import {topKBuckets} from "../divergences/topKBuckets.js";
import {softmax} from "../distributions/softmax.js";
import {InvalidInputError} from "../errors.js";
import type {Chance} from "../random/Chance.js";
import {ScratchRow, sampleFromRow} from "./rowOperations.js";
import {verifyLeftToRight} from "./verifyLeftToRight.js";
import type {VerificationPolicy, VerificationStep} from "./VerificationPolicy.js";

export interface FuzzyPolicyOptions {
    readonly divergence: DivergenceKind;
    /** Accept iff divergence ≤ threshold (the FSD reference code's `<=`; the paper writes `<`). */
    readonly threshold: number;
    /** Compare only the target's top-k ids plus one rest bucket (the FSD reference code's top-k variants use k = 50; the paper gives no k). */
    readonly topK?: number;
    /**
     * `raw`: divergence between the unwarped softmax of both models' logits, as the FSD reference
     * code does, so the threshold means the same at any temperature (at temperature 0 the processed
     * rows are one-hot and the divergence degenerates). `processed`: between the sampler rows.
     */
    readonly distribution: "raw" | "processed";
}

/**
 * Fuzzy Speculative Decoding (the Fuzzy SD paper). Deterministic acceptance: position i is accepted iff
 * Div(p_i, q_i) ≤ T (the paper writes "< T"; "≤" is its reference code's, which this follows); the accepted prefix is the leading accepted positions; a rejected position is
 * replaced by a sample from the target row itself (not the residual); the bonus comes from row γ.
 * Sequence-level bound: Div(P_T, P_FSD) ≤ N·%draft·T (see speedup/fsdSequenceBound).
 * A proposal without draft rows (n-gram, suffix, greedy model drafts; for `raw`, without draft
 * logits) is compared as q = δ_x, the same convention as strict: Div(p, δ_x) shrinks as the target
 * puts more of its mass on x (JS(p, δ_x) = 0 iff p = δ_x; KL(p‖δ_x) is infinite unless p = δ_x).
 */
export function createFuzzyPolicy(options: FuzzyPolicyOptions): VerificationPolicy {
    const divergence = divergenceByKind[options.divergence];
    const targetScratch = new ScratchRow();
    const draftScratch = new ScratchRow();
    const topK = options.topK;
    const bucketTarget = new Float64Array((topK ?? 0) + 1);
    const bucketDraft = new Float64Array((topK ?? 0) + 1);
    const bucketIds = new Int32Array(topK ?? 0);
    const pointMass = new ScratchRow();
    // δ_x in a reused row; the caller resets the entry after the comparison.
    const delta = (length: number, token: number): Float64Array => {
        const row = pointMass.get(length);
        row[token] = 1;
        return row;
    };

    const distributionsAt = (step: VerificationStep, position: number, draftToken: number): [Float64Array, Float64Array] => {
        if (options.distribution === "processed") {
            const target = step.targetProbs[position];
            return [target, step.draftProbs?.[position] ?? delta(target.length, draftToken)];
        }
        const targetLogits = step.targetLogits?.[position];
        if (targetLogits == null)
            throw new InvalidInputError('the fuzzy policy with distribution "raw" needs raw target logits', "targetLogits");
        const draftLogits = step.draftLogits?.[position];
        return [
            softmax(targetLogits, targetScratch.get(targetLogits.length)),
            draftLogits == null ? delta(targetLogits.length, draftToken) : softmax(draftLogits, draftScratch.get(draftLogits.length))
        ];
    };

    return {
        kind: "fuzzy",
        lossless: false,
        verify(step: VerificationStep, chance: Chance) {
            return verifyLeftToRight(
                step,
                (position, draftToken) => {
                    const [target, draft] = distributionsAt(step, position, draftToken);
                    const value =
                        topK == null
                            ? divergence(target, draft)
                            : divergence(bucketTarget, bucketDraft, topKBuckets(target, draft, topK, bucketTarget, bucketDraft, bucketIds));
                    if (draft === pointMass.get(target.length)) draft[draftToken] = 0;
                    const accepted = value <= options.threshold;
                    return {
                        accepted,
                        reason: accepted ? "divergence-within-threshold" : "divergence-above-threshold",
                        values: {divergence: value, threshold: options.threshold},
                        replacement: accepted ? undefined : sampleFromRow(step.targetProbs[position], chance)
                    };
                },
                "target-sample",
                () => sampleFromRow(step.targetProbs[step.draftTokens.length], chance)
            );
        }
    };
}
