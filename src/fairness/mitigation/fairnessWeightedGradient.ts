import type {LlamaConfig} from "../../foundry/model/LlamaConfig.js";
import {llamaLossAndGradients, type TrainingSequence} from "../../foundry/model/llamaLossAndGradients.js";
import {type LlamaWeights, zeroLlamaWeights} from "../../foundry/model/LlamaWeights.js";
import type {RopeTable} from "../../foundry/model/RopeTable.js";
import {scdfGradientWeights} from "../scdfGradientWeights.js";
import {unfairness} from "../unfairness.js";

/**
 * "scdf": seed 003 Algorithm 1, group T weighted by (D̂_T − D̂_min)/m. "rebalance": every group
 * weighted 1/m, i.e. plain distillation on a group-balanced mixture — §8.3's data re-balancing.
 */
export type MitigationMethod = "scdf" | "rebalance";

export interface WeightedGradient {
    /** D̂_T of each group's mini-batch, before the update. */
    readonly divergences: number[];
    /** The coefficient of each ∇D̂_T in the combined gradient. */
    readonly weights: number[];
    /** Σ_T weights[T]·∇θ D̂_T. */
    readonly gradients: LlamaWeights;
    /** Û = (1/m) Σ (D̂_T − D̂_min)² on these mini-batches: the objective eq. (9) descends. */
    readonly objective: number;
    /** Continuation positions scored across all mini-batches. */
    readonly positions: number;
}

/**
 * One mini-batch per group: D̂_T and ∇θ D̂_T from the reference model (soft targets, so D̂_T is the
 * position-pooled cross-entropy −Σ p log q that analyze reports as D_T), then the method's weights
 * with D̂_min held constant — the best group's weight is exactly 0 under s-CDF — and their sum.
 */
export function fairnessWeightedGradient(
    config: LlamaConfig, weights: LlamaWeights, rope: RopeTable, batches: readonly (readonly TrainingSequence[])[], method: MitigationMethod
): WeightedGradient {
    const parts = batches.map((batch) => llamaLossAndGradients(config, weights, rope, batch));
    const divergences = parts.map((part) => part.loss);
    const scdf = scdfGradientWeights(divergences);
    const groupWeights = method === "scdf" ? scdf.weights : divergences.map(() => 1 / divergences.length);
    const gradients = zeroLlamaWeights(config);
    parts.forEach((part, group) => {
        const coefficient = groupWeights[group];
        if (coefficient === 0) return;
        for (const [name, total] of gradients) {
            const gradient = part.gradients.get(name)!;
            for (let i = 0; i < total.length; i++) total[i] += coefficient * gradient[i];
        }
    });
    return {divergences, weights: groupWeights, gradients, objective: unfairness(divergences), positions: parts.reduce((sum, part) => sum + part.weightTotal, 0)};
}
