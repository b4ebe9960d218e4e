import type {Chance} from "../random/Chance.js";
import {sumOf} from "../policies/rowOperations.js";
import type {VerificationPolicy, VerificationResult, VerificationStep} from "../policies/VerificationPolicy.js";
import type {StepInput} from "./StepInput.js";

/**
 * One draw-and-verify of a StepInput, reusable across samples: the step object and the draft-token
 * buffer are built once; in "sample" mode each call draws fresh draft tokens from the draft rows
 * with the same Chance the policy uses, so enumeration covers the draft's randomness too.
 */
export function createStepRunner(input: StepInput, policy: VerificationPolicy): (chance: Chance) => VerificationResult {
    const sampled = input.draftTokens === "sample";
    const draftTokens = sampled ? new Int32Array(input.gamma) : (input.draftTokens as Int32Array);
    const step: VerificationStep = {
        draftTokens,
        targetProbs: input.targetProbs,
        draftProbs: input.draftProbs,
        targetLogits: input.targetLogits,
        draftLogits: input.draftLogits
    };
    const draftSums = (input.draftProbs ?? []).map((row) => sumOf(row));
    return (chance: Chance) => {
        if (sampled)
            for (let position = 0; position < input.gamma; position++)
                draftTokens[position] = chance.choose(input.draftProbs![position], draftSums[position]);
        return policy.verify(step, chance);
    };
}
