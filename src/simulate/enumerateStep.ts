import {totalVariation} from "../divergences/divergences.js";
import {createPolicy, type PolicyResources} from "../policies/createPolicy.js";
import {enumerateOutcomes} from "../random/enumerateOutcomes.js";
import {createStepRunner} from "./runStep.js";
import type {StepInput} from "./StepInput.js";

export interface ExactStepDistribution {
    /** P(first emitted token = id), exact up to float rounding. */
    firstToken: Float64Array;
    /** P(emitted sequence), keyed by the ids joined with ",". */
    sequences: Map<string, number>;
    /** E[accepted draft tokens]. */
    expectedAccepted: number;
    /** TV between the first-token distribution and the target's first row. */
    firstTokenTotalVariation: number;
    outcomes: number;
}

/**
 * The exact one-step output distribution of a policy on a StepInput, by enumerating every random
 * decision the policy (and the draft sampler, in "sample" mode) can make. Feasible for small V and γ;
 * bounded by `maxOutcomes`.
 */
export function enumerateStep(input: StepInput, options: {resources?: PolicyResources; maxOutcomes?: number} = {}): ExactStepDistribution {
    // A calibrated policy updates its memory as it runs; every replayed path must start from the
    // same memory, so it gets a fresh policy over a copy. Other policies are stateless and reused.
    const build = () =>
        createStepRunner(
            input,
            createPolicy(input.policy, {
                vocabularySize: input.vocabularySize,
                ...options.resources,
                correctionMemory: options.resources?.correctionMemory?.clone()
            })
        );
    const statefulPolicy = input.policy.kind === "calibrated";
    const sharedRun = statefulPolicy ? undefined : build();
    const outcomes = enumerateOutcomes(
        (chance) => {
            const result = (sharedRun ?? build())(chance);
            return {emitted: result.emitted, accepted: result.acceptedCount};
        },
        {maxOutcomes: options.maxOutcomes}
    );
    const firstToken = new Float64Array(input.vocabularySize);
    const sequences = new Map<string, number>();
    let expectedAccepted = 0;
    for (const {result, probability} of outcomes) {
        firstToken[result.emitted[0]] += probability;
        const key = result.emitted.join(",");
        sequences.set(key, (sequences.get(key) ?? 0) + probability);
        expectedAccepted += probability * result.accepted;
    }
    return {
        firstToken,
        sequences,
        expectedAccepted,
        firstTokenTotalVariation: totalVariation(firstToken, input.targetProbs[0]),
        outcomes: outcomes.length
    };
}
