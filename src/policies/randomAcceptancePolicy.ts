import type {Chance} from "../random/Chance.js";
import {sampleFromRow} from "./rowOperations.js";
import {verifyLeftToRight} from "./verifyLeftToRight.js";
import type {VerificationPolicy, VerificationStep} from "./VerificationPolicy.js";

/**
 * The Fuzzy SD paper's random-acceptance baseline: accept each draft token with a fixed probability,
 * regardless of either distribution; a rejected position is resampled from the target row, as FSD
 * does. Matching its rate to a fuzzy run shows whether the divergence picks tokens better than chance.
 */
export function createRandomAcceptancePolicy(options: {readonly acceptanceProbability: number}): VerificationPolicy {
    return {
        kind: "random",
        lossless: false,
        verify(step: VerificationStep, chance: Chance) {
            return verifyLeftToRight(
                step,
                (position) => {
                    const accepted = chance.accept(options.acceptanceProbability);
                    return {
                        accepted,
                        reason: accepted ? "random-accepted" : "random-rejected",
                        values: {acceptProbability: options.acceptanceProbability},
                        replacement: accepted ? undefined : sampleFromRow(step.targetProbs[position], chance)
                    };
                },
                "target-sample",
                () => sampleFromRow(step.targetProbs[step.draftTokens.length], chance)
            );
        }
    };
}
