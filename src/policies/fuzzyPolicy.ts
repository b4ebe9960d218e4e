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
    /** Compare only the target's top-k ids plus one rest bucket (the paper's top-k variants use 50). */
    readonly topK?: number;
    /**
     * `raw`: divergence between the unwarped softmax of both models' logits, as the FSD reference
     * code does, so the threshold means the same at any temperature (at temperature 0 the processed
     * rows are one-hot and the divergence degenerates). `processed`: between the sampler rows.
     */
    readonly distribution: "raw" | "processed";
}

/**
 * Fuzzy Speculative Decoding (seed 001). Deterministic acceptance: position i is accepted iff
 * Div(p_i, q_i) ≤ T; the accepted prefix is the leading accepted positions; a rejected position is
 * replaced by a sample from the target row itself (not the residual); the bonus comes from row γ.
 * Sequence-level bound: Div(P_T, P_FSD) ≤ N·%draft·T (see speedup/fsdSequenceBound).
 */
export function createFuzzyPolicy(options: FuzzyPolicyOptions): VerificationPolicy {
    const divergence = divergenceByKind[options.divergence];
    const targetScratch = new ScratchRow();
    const draftScratch = new ScratchRow();
    const topK = options.topK;
    const bucketTarget = new Float64Array((topK ?? 0) + 1);
    const bucketDraft = new Float64Array((topK ?? 0) + 1);
    const bucketIds = new Int32Array(topK ?? 0);

    const distributionsAt = (step: VerificationStep, position: number): [Float64Array, Float64Array] => {
        if (options.distribution === "processed") {
            const draft = step.draftProbs?.[position];
            if (draft == null)
                throw new InvalidInputError("the fuzzy policy needs the draft distribution of every draft token", "draftProbs");
            return [step.targetProbs[position], draft];
        }
        const targetLogits = step.targetLogits?.[position];
        const draftLogits = step.draftLogits?.[position];
        if (targetLogits == null || draftLogits == null)
            throw new InvalidInputError(
                "the fuzzy policy with distribution \"raw\" needs raw target and draft logits",
                targetLogits == null ? "targetLogits" : "draftLogits"
            );
        return [
            softmax(targetLogits, targetScratch.get(targetLogits.length)),
            softmax(draftLogits, draftScratch.get(draftLogits.length))
        ];
    };

    return {
        kind: "fuzzy",
        lossless: false,
        verify(step: VerificationStep, chance: Chance) {
            return verifyLeftToRight(step, (position) => {
                const [target, draft] = distributionsAt(step, position);
                const value = topK == null
                    ? divergence(target, draft)
                    : divergence(bucketTarget, bucketDraft, topKBuckets(target, draft, topK, bucketTarget, bucketDraft, bucketIds));
                const accepted = value <= options.threshold;
                return {
                    accepted,
                    reason: accepted ? "divergence-within-threshold" : "divergence-above-threshold",
                    values: {divergence: value, threshold: options.threshold},
                    replacement: accepted ? undefined : sampleFromRow(step.targetProbs[position], chance)
                };
            }, "target-sample", () => sampleFromRow(step.targetProbs[step.draftTokens.length], chance));
        }
    };
}
