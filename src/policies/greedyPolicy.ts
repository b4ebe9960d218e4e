import {argmax} from "../distributions/argmax.js";
import {verifyLeftToRight} from "./verifyLeftToRight.js";
import type {VerificationPolicy, VerificationStep} from "./VerificationPolicy.js";

/**
 * Greedy verification: accept a draft token iff it equals the target's argmax; the first mismatch
 * is replaced by the argmax, and the bonus is the argmax of row γ. Argmax is taken on raw logits
 * when present (probabilities can tie after rounding where logits do not), lowest id on ties, or
 * read from `targetArgmax` when the backend returned only argmax ids.
 * This is vLLM's greedy rejection sampler and what every policy reduces to at temperature 0.
 */
export function createGreedyPolicy(): VerificationPolicy {
    return {
        kind: "greedy",
        lossless: true,
        verify(step: VerificationStep) {
            const targetArgmax = (position: number) =>
                step.targetArgmax?.[position] ?? argmax(step.targetLogits?.[position] ?? step.targetProbs[position]);
            return verifyLeftToRight(
                step,
                (position, draftToken) => {
                    const best = targetArgmax(position);
                    const accepted = draftToken === best;
                    return {
                        accepted,
                        reason: accepted ? "equals-target-argmax" : "differs-from-target-argmax",
                        values: {targetArgmax: best},
                        replacement: best
                    };
                },
                "target-argmax",
                () => targetArgmax(step.draftTokens.length)
            );
        }
    };
}
