import type {Chance} from "../random/Chance.js";
import {sampleFromRow} from "./rowOperations.js";
import type {PositionDiagnostic, VerificationPolicy, VerificationStep} from "./VerificationPolicy.js";

/**
 * Seed 001's random-acceptance baseline: accept each draft token with a fixed probability,
 * regardless of either distribution; a rejected position is resampled from the target row, as FSD
 * does. Matching its rate to a fuzzy run shows whether the divergence picks tokens better than chance.
 */
export function createRandomAcceptancePolicy(options: {readonly acceptanceProbability: number}): VerificationPolicy {
    return {
        kind: "random",
        lossless: false,
        verify(step: VerificationStep, chance: Chance) {
            const gamma = step.draftTokens.length;
            const positions: PositionDiagnostic[] = [];
            const emitted: number[] = [];
            for (let position = 0; position < gamma; position++) {
                const draftToken = step.draftTokens[position];
                const accepted = chance.accept(options.acceptanceProbability);
                positions.push({
                    position,
                    draftToken,
                    accepted,
                    reason: accepted ? "random-accepted" : "random-rejected",
                    values: {acceptProbability: options.acceptanceProbability}
                });
                if (!accepted) {
                    emitted.push(sampleFromRow(step.targetProbs[position], chance));
                    return {acceptedCount: position, emitted, finalTokenSource: "target-sample", positions};
                }
                emitted.push(draftToken);
            }
            emitted.push(sampleFromRow(step.targetProbs[gamma], chance));
            return {acceptedCount: gamma, emitted, finalTokenSource: "bonus", positions};
        }
    };
}
