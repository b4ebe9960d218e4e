import {argmax} from "../distributions/argmax.js";
import type {Chance} from "../random/Chance.js";
import {sampleFromRow} from "./rowOperations.js";
import {verifyLeftToRight} from "./verifyLeftToRight.js";
import type {VerificationPolicy, VerificationStep} from "./VerificationPolicy.js";

export interface TypicalPolicyOptions {
    /** vLLM default 0.09. */
    readonly posteriorThreshold: number;
    /** vLLM default 0.3. */
    readonly posteriorAlpha: number;
}

/**
 * Typical acceptance (Medusa; vLLM v0 TypicalAcceptanceSampler). Ignores q. Accept x iff
 * p(x) > min(posteriorThreshold, posteriorAlpha · exp(−H(p))) with H(p) = −Σ p·ln(p + 1e-5), the
 * epsilon exactly as vLLM computes it. The first rejection emits the target argmax; the bonus is
 * sampled from row γ. Not lossless.
 */
export function createTypicalPolicy(options: TypicalPolicyOptions): VerificationPolicy {
    return {
        kind: "typical",
        lossless: false,
        verify(step: VerificationStep, chance: Chance) {
            return verifyLeftToRight(
                step,
                (position, draftToken) => {
                    const target = step.targetProbs[position];
                    const entropy = vllmEntropy(target);
                    const threshold = Math.min(options.posteriorThreshold, options.posteriorAlpha * Math.exp(-entropy));
                    const targetProbability = target[draftToken];
                    const accepted = targetProbability > threshold;
                    return {
                        accepted,
                        reason: accepted ? "above-typical-threshold" : "below-typical-threshold",
                        values: {targetProbability, threshold, entropy},
                        replacement: accepted ? undefined : argmax(target)
                    };
                },
                "target-argmax",
                () => sampleFromRow(step.targetProbs[step.draftTokens.length], chance)
            );
        }
    };
}

function vllmEntropy(row: Float64Array): number {
    let sum = 0;
    for (let index = 0; index < row.length; index++) {
        const value = row[index];
        if (value > 0) sum -= value * Math.log(value + 1e-5);
    }
    return sum;
}
