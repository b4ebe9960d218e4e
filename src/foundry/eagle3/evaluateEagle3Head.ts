import type {RopeTable} from "../model/RopeTable.js";
import type {Eagle3Config} from "./Eagle3Config.js";
import type {Eagle3Example} from "./Eagle3Example.js";
import {eagle3Forward} from "./eagle3Forward.js";
import type {Eagle3Weights} from "./Eagle3Weights.js";

export interface Eagle3Evaluation {
    /** Mean cross-entropy (nats) per unrolled step over the scored rows. */
    readonly stepLoss: number[];
    /** Per step, the share of rows whose argmax is the target's token (teacher-forced chain). */
    readonly stepAccuracy: number[];
    /**
     * Greedy acceptance (accepted / drafted) of a γ = unrolledSteps chain drafted at every scored root:
     * the accepted prefix is the steps before the first argmax miss. An estimate of what
     * llama-speculative-simple reports, which drafts only at the roots its accepted runs reach.
     */
    readonly chainAcceptance: number;
    readonly roots: number;
}

/**
 * Scores a head on held-out sequences at every root whose first label lies in the generated part
 * (`firstScored[i]`: the first root of sequence i that is scored), without gradients.
 */
export function evaluateEagle3Head(
    config: Eagle3Config,
    weights: Eagle3Weights,
    rope: RopeTable,
    examples: readonly Eagle3Example[],
    firstScored: readonly number[],
    unrolledSteps: number
): Eagle3Evaluation {
    const vocabulary = config.vocabularySize;
    const loss = new Array<number>(unrolledSteps).fill(0);
    const correct = new Array<number>(unrolledSteps).fill(0);
    const rows = new Array<number>(unrolledSteps).fill(0);
    let accepted = 0;
    let roots = 0;
    examples.forEach((example, index) => {
        const forward = eagle3Forward(config, weights, rope, {...example, chainStart: firstScored[index]}, unrolledSteps);
        const hits: boolean[][] = forward.logits.map((logits, k) => {
            const count = logits.length / vocabulary;
            const hit: boolean[] = [];
            const firstRoot = forward.steps[k].firstRoot;
            for (let row = 0; row < count; row++) {
                const root = firstRoot + row;
                const offset = row * vocabulary;
                const label = example.tokens[root + k + 2];
                let maximum = -Infinity;
                let best = 0;
                for (let v = 0; v < vocabulary; v++)
                    if (logits[offset + v] > maximum) {
                        maximum = logits[offset + v];
                        best = v;
                    }
                let total = 0;
                for (let v = 0; v < vocabulary; v++) total += Math.exp(logits[offset + v] - maximum);
                hit.push(best === label);
                if (root < firstScored[index]) continue;
                loss[k] += maximum + Math.log(total) - logits[offset + label];
                rows[k]++;
                if (best === label) correct[k]++;
            }
            return hit;
        });
        if (hits.length < unrolledSteps) return;
        const firstRoots = forward.steps.map((step) => step.firstRoot);
        const end = firstRoots[unrolledSteps - 1] + hits[unrolledSteps - 1].length;
        for (let root = firstScored[index]; root < end; root++) {
            let prefix = 0;
            while (prefix < unrolledSteps && hits[prefix][root - firstRoots[prefix]]) prefix++;
            accepted += prefix;
            roots++;
        }
    });
    return {
        stepLoss: loss.map((value, k) => value / Math.max(1, rows[k])),
        stepAccuracy: correct.map((value, k) => value / Math.max(1, rows[k])),
        chainAcceptance: roots === 0 ? 0 : accepted / (roots * unrolledSteps),
        roots
    };
}
