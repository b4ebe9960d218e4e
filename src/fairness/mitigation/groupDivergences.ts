import type {LlamaConfig} from "../../foundry/model/LlamaConfig.js";
import type {TrainingSequence} from "../../foundry/model/llamaLossAndGradients.js";
import {llamaForward} from "../../foundry/model/llamaForward.js";
import type {LlamaWeights} from "../../foundry/model/LlamaWeights.js";
import type {RopeTable} from "../../foundry/model/RopeTable.js";

/**
 * D_T of every group over all of its sequences — the same weighted, position-pooled cross-entropy
 * llamaLossAndGradients reports as its loss, from the forward pass alone (a third of the cost),
 * to measure the whole distillation set before and after a run rather than noisy mini-batches.
 */
export function groupDivergences(
    config: LlamaConfig,
    weights: LlamaWeights,
    rope: RopeTable,
    groups: readonly (readonly TrainingSequence[])[]
): number[] {
    const vocabulary = config.vocabularySize;
    return groups.map((sequences) => {
        let total = 0;
        let weightTotal = 0;
        for (const sequence of sequences) {
            const {logits} = llamaForward(config, weights, rope, sequence.tokens.slice(0, -1));
            for (let t = 0; t < sequence.tokens.length - 1; t++) {
                const weight = sequence.lossWeights?.[t] ?? 1;
                if (weight === 0) continue;
                const offset = t * vocabulary;
                let maximum = -Infinity;
                for (let v = 0; v < vocabulary; v++) maximum = Math.max(maximum, logits[offset + v]);
                let sum = 0;
                for (let v = 0; v < vocabulary; v++) sum += Math.exp(logits[offset + v] - maximum);
                const logNormalizer = maximum + Math.log(sum);
                const soft = sequence.targetDistributions?.[t];
                let crossEntropy = 0;
                if (soft === undefined) crossEntropy = logNormalizer - logits[offset + sequence.tokens[t + 1]];
                else for (let v = 0; v < vocabulary; v++) crossEntropy += soft[v] * (logNormalizer - logits[offset + v]);
                total += weight * crossEntropy;
                weightTotal += weight;
            }
        }
        return total / weightTotal;
    });
}
