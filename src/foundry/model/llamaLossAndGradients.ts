import {validateProbabilityRow} from "../../distributions/validateDistribution.js";
import {InvalidInputError, TokenOutOfRangeError} from "../../errors.js";
import type {LlamaConfig} from "./LlamaConfig.js";
import {llamaBackward} from "./llamaBackward.js";
import {llamaForward} from "./llamaForward.js";
import {type LlamaWeights, zeroLlamaWeights} from "./LlamaWeights.js";
import type {RopeTable} from "./RopeTable.js";

/** One training sequence: position t predicts tokens[t + 1] with weight lossWeights[t] (default 1). */
export interface TrainingSequence {
    readonly tokens: readonly number[];
    /** tokens.length − 1 non-negative weights, e.g. 0 on a prompt to train on the answer only. */
    readonly lossWeights?: readonly number[];
    /**
     * tokens.length − 1 entries; a row (a probability distribution over the vocabulary) replaces the
     * one-hot of tokens[t + 1] at position t, so the loss there is the cross-entropy −Σ p log q
     * (distillation from a teacher, the Disparate Impacts paper's D_T); undefined entries keep the hard label.
     */
    readonly targetDistributions?: readonly (Float64Array | undefined)[];
}

export interface LossAndGradients {
    /** Weighted mean next-token cross-entropy, in nats. */
    readonly loss: number;
    /** Σ loss weights: the number of predicted tokens when unweighted. */
    readonly weightTotal: number;
    /** ∂loss/∂w for every tensor. */
    readonly gradients: LlamaWeights;
}

/**
 * Weighted mean next-token cross-entropy over a batch of sequences and its exact gradient: each
 * sequence is run forward, its logit gradients (softmax − one-hot, or Σp·softmax − p for a soft
 * target row p, times weight / Σ weights) are back-propagated, and the gradients of all sequences add up.
 */
export function llamaLossAndGradients(
    config: LlamaConfig,
    weights: LlamaWeights,
    rope: RopeTable,
    batch: readonly TrainingSequence[]
): LossAndGradients {
    const vocabulary = config.vocabularySize;
    let weightTotal = 0;
    batch.forEach((sequence, index) => {
        const expected = sequence.tokens.length - 1;
        if (expected < 1) throw new InvalidInputError("a training sequence needs at least two tokens", `batch[${index}].tokens`);
        const lossWeights = sequence.lossWeights;
        if (lossWeights !== undefined && lossWeights.length !== expected)
            throw new InvalidInputError(`expected ${expected} loss weights, got ${lossWeights.length}`, `batch[${index}].lossWeights`);
        const distributions = sequence.targetDistributions;
        if (distributions !== undefined) {
            if (distributions.length !== expected)
                throw new InvalidInputError(
                    `expected ${expected} target distributions, got ${distributions.length}`,
                    `batch[${index}].targetDistributions`
                );
            distributions.forEach((row, position) => {
                if (row !== undefined) validateProbabilityRow(row, vocabulary, `batch[${index}].targetDistributions[${position}]`);
            });
        }
        sequence.tokens.forEach((token, position) => {
            if (!Number.isInteger(token) || token < 0 || token >= vocabulary)
                throw new TokenOutOfRangeError(`token ${token} is outside [0, ${vocabulary})`, `batch[${index}].tokens[${position}]`);
        });
        for (let t = 0; t < expected; t++) {
            const weight = lossWeights?.[t] ?? 1;
            if (!(weight >= 0) || !Number.isFinite(weight))
                throw new InvalidInputError(`loss weights must be finite and >= 0, got ${weight}`, `batch[${index}].lossWeights[${t}]`);
            weightTotal += weight;
        }
    });
    if (!(weightTotal > 0)) throw new InvalidInputError("the batch has no positive loss weight", "batch");

    const gradients = zeroLlamaWeights(config);
    let loss = 0;
    for (const sequence of batch) {
        // The last position predicts nothing, so it is not run: its logits would get a zero gradient.
        const inputs = sequence.tokens.slice(0, -1);
        const {logits, activations} = llamaForward(config, weights, rope, inputs);
        const logitGradients = new Float64Array(logits.length);
        for (let t = 0; t < inputs.length; t++) {
            const weight = (sequence.lossWeights?.[t] ?? 1) / weightTotal;
            if (weight === 0) continue;
            const offset = t * vocabulary;
            let maximum = -Infinity;
            for (let v = 0; v < vocabulary; v++) maximum = Math.max(maximum, logits[offset + v]);
            let total = 0;
            for (let v = 0; v < vocabulary; v++) total += Math.exp(logits[offset + v] - maximum);
            const logNormalizer = maximum + Math.log(total);
            const soft = sequence.targetDistributions?.[t];
            if (soft === undefined) {
                const target = sequence.tokens[t + 1];
                loss += weight * (logNormalizer - logits[offset + target]);
                for (let v = 0; v < vocabulary; v++) logitGradients[offset + v] = (weight * Math.exp(logits[offset + v] - maximum)) / total;
                logitGradients[offset + target] -= weight;
            } else {
                // −Σ p log softmax(z) = Σ p (log Z − z); its gradient is (Σ p)·softmax − p. Keeping Σ p
                // (1 within the row tolerance) makes the gradient exact for the loss as computed.
                let mass = 0;
                let crossEntropy = 0;
                for (let v = 0; v < vocabulary; v++) {
                    mass += soft[v];
                    crossEntropy += soft[v] * (logNormalizer - logits[offset + v]);
                }
                loss += weight * crossEntropy;
                for (let v = 0; v < vocabulary; v++)
                    logitGradients[offset + v] = weight * ((mass * Math.exp(logits[offset + v] - maximum)) / total - soft[v]);
            }
        }
        llamaBackward(config, weights, rope, activations, logitGradients, gradients);
    }
    return {loss, weightTotal, gradients};
}
