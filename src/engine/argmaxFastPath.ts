import type {ArgmaxCapableSequence, BackendSequence} from "../backend/ModelBackend.js";
import {supportsArgmax} from "../backend/sequenceCapabilities.js";
import type {GenerationOptions} from "./GenerationOptions.js";

/** Policies that are exact match with the target argmax at temperature 0. */
const greedyEquivalentAtTemperatureZero = new Set(["greedy", "strict", "block", "match", "typical"]);

/**
 * The target sequence, where steps may read argmax ids instead of rows (options.argmaxFastPath): at
 * temperature 0 with a greedy-equivalent policy, none given by the caller (the fast path would
 * bypass it), nothing that reads rows (a constraint masks them; logprobs report them), and a
 * sequence that returns argmax ids. Absent: steps read rows.
 */
export function argmaxFastPathSequence(
    sequence: BackendSequence,
    options: GenerationOptions,
    reads: {readonly policyGiven: boolean; readonly constrained: boolean}
): ArgmaxCapableSequence | undefined {
    const possible =
        options.argmaxFastPath &&
        options.sampling.temperature === 0 &&
        options.minConfidence === 0 &&
        !reads.policyGiven &&
        greedyEquivalentAtTemperatureZero.has(options.policy.kind) &&
        !reads.constrained &&
        options.logprobs === undefined;
    return possible && supportsArgmax(sequence) ? sequence : undefined;
}
