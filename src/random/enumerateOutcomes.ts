import {EnumerationTooLargeError} from "../errors.js";
import type {Chance} from "./Chance.js";

/** One leaf of the outcome tree: a result and the exact probability of the path that produced it. */
export interface EnumeratedOutcome<Result> {
    result: Result;
    probability: number;
}

/**
 * Runs `experiment` once for every possible sequence of random decisions and returns every result
 * with its exact probability (the product of the branch probabilities along its path).
 *
 * Depth-first replay: each run follows a recorded prefix of choices; the first decision past the
 * prefix takes its first non-zero branch and pushes the siblings for later runs. The experiment
 * must be deterministic given its decisions (all verification policies are). Zero-probability
 * branches are pruned, so a policy that returns a zero-probability token shows up as a wrong
 * distribution rather than being hidden.
 */
export function enumerateOutcomes<Result>(
    experiment: (chance: Chance) => Result,
    options: {maxOutcomes?: number} = {}
): Array<EnumeratedOutcome<Result>> {
    const maxOutcomes = options.maxOutcomes ?? 1_000_000;
    const outcomes: Array<EnumeratedOutcome<Result>> = [];
    // Each pending path: the forced branch index at each decision, and its probability so far.
    const pending: Array<{choices: number[]; probability: number}> = [{choices: [], probability: 1}];

    while (pending.length > 0) {
        const path = pending.pop()!;
        let depth = 0;
        let probability = path.probability;
        const choices = path.choices.slice();

        const decide = (branches: Array<{value: number; probability: number}>): number => {
            if (depth < path.choices.length) {
                // Replaying: the probability of this branch was already multiplied in.
                return branches[path.choices[depth++]].value;
            }
            for (let index = branches.length - 1; index >= 1; index--)
                pending.push({choices: [...choices, index], probability: probability * branches[index].probability});
            choices.push(0);
            probability *= branches[0].probability;
            depth++;
            return branches[0].value;
        };

        const chance: Chance = {
            accept(acceptProbability: number): boolean {
                const clamped = Math.min(1, Math.max(0, acceptProbability));
                const branches: Array<{value: number; probability: number}> = [];
                if (clamped > 0) branches.push({value: 1, probability: clamped});
                if (clamped < 1) branches.push({value: 0, probability: 1 - clamped});
                return decide(branches) === 1;
            },
            choose(weights: ArrayLike<number>, total: number, length: number = weights.length): number {
                const branches: Array<{value: number; probability: number}> = [];
                for (let index = 0; index < length; index++)
                    if (weights[index] > 0) branches.push({value: index, probability: weights[index] / total});
                if (branches.length === 0) throw new RangeError("cannot sample from a distribution with no positive weight");
                return decide(branches);
            }
        };

        const result = experiment(chance);
        outcomes.push({result, probability});
        if (outcomes.length > maxOutcomes)
            throw new EnumerationTooLargeError(`more than ${maxOutcomes} outcomes; use a smaller vocabulary or γ`);
    }
    return outcomes;
}
