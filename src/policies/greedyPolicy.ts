import {argmax} from "../distributions/argmax.js";
import type {PositionDiagnostic, VerificationPolicy, VerificationStep} from "./VerificationPolicy.js";

/**
 * Greedy verification: accept a draft token iff it equals the target's argmax; the first mismatch
 * is replaced by the argmax, and the bonus is the argmax of row γ. Argmax is taken on raw logits
 * when present (probabilities can tie after rounding where logits do not), lowest id on ties.
 * This is vLLM's greedy rejection sampler and what every policy reduces to at temperature 0.
 */
export function createGreedyPolicy(): VerificationPolicy {
    return {
        kind: "greedy",
        lossless: true,
        verify(step: VerificationStep) {
            const gamma = step.draftTokens.length;
            const positions: PositionDiagnostic[] = [];
            const emitted: number[] = [];
            const targetArgmax = (position: number) => step.targetArgmax?.[position] ?? argmax(step.targetLogits?.[position] ?? step.targetProbs[position]);
            for (let position = 0; position < gamma; position++) {
                const draftToken = step.draftTokens[position];
                const best = targetArgmax(position);
                const accepted = draftToken === best;
                positions.push({
                    position,
                    draftToken,
                    accepted,
                    reason: accepted ? "equals-target-argmax" : "differs-from-target-argmax",
                    values: {targetArgmax: best}
                });
                emitted.push(best);
                if (!accepted)
                    return {acceptedCount: position, emitted, finalTokenSource: "target-argmax", positions};
            }
            emitted.push(targetArgmax(gamma));
            return {acceptedCount: gamma, emitted, finalTokenSource: "bonus", positions};
        }
    };
}
