import type {Chance} from "../random/Chance.js";
import {sampleFromRow} from "./rowOperations.js";
import {verifyLeftToRight} from "./verifyLeftToRight.js";
import type {VerificationPolicy, VerificationStep} from "./VerificationPolicy.js";

/**
 * Match-the-sample verification (llama.cpp's server and node-llama-cpp's DraftSequenceTokenPredictor):
 * the target samples its own token at each position; a draft token is accepted iff it equals that
 * sample, the first mismatch is replaced by the sample, and a bonus is sampled when all match.
 * Lossless whatever the draft (it never reads q), but it accepts with probability p(x) rather than
 * min(1, p(x)/q(x)), so less often than `strict` at temperature > 0.
 */
export function createMatchPolicy(): VerificationPolicy {
    return {
        kind: "match",
        lossless: true,
        verify(step: VerificationStep, chance: Chance) {
            return verifyLeftToRight(
                step,
                (position, draftToken) => {
                    const targetSample = sampleFromRow(step.targetProbs[position], chance);
                    const accepted = targetSample === draftToken;
                    return {
                        accepted,
                        reason: accepted ? "equals-target-sample" : "differs-from-target-sample",
                        values: {targetSample},
                        replacement: targetSample
                    };
                },
                "target-sample",
                () => sampleFromRow(step.targetProbs[step.draftTokens.length], chance)
            );
        }
    };
}
