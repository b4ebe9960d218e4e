import type {LlamaConfig} from "../../foundry/model/LlamaConfig.js";
import {llamaLossAndGradients, type TrainingSequence} from "../../foundry/model/llamaLossAndGradients.js";
import {type LlamaWeights, zeroLlamaWeights} from "../../foundry/model/LlamaWeights.js";
import type {RopeTable} from "../../foundry/model/RopeTable.js";
import {scdfGradientWeights} from "../scdfGradientWeights.js";
import {unfairness} from "../unfairness.js";

/**
 * "scdf": the Disparate Impacts paper's Algorithm 1, group T weighted by (D̂_T − D̂_min)/m.
 * "rebalance": every group weighted 1/m, i.e. plain distillation on a group-balanced mixture. This
 * is this tool's baseline, not the paper's: the paper's data balancing (§8.3) varies the share of
 * one language in a bilingual fine-tuning mix.
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
 * One or more mini-batches per group: D̂_T and ∇θ D̂_T from the reference model (soft targets, so D̂_T
 * is the position-pooled cross-entropy −Σ p log q that analyze reports as D_T), averaged over the
 * group's mini-batches when there are several (gradient accumulation: the Disparate Impacts paper D.1 takes r_ℓ as "mean
 * over the mini-batches of that language" and scales each mini-batch's gradient by
 * (r_ℓ − r*)/(GRAD_ACCUM·|{ℓ}|), which is the weight (r_ℓ − r*)/m times the mean gradient), then the
 * method's weights with D̂_min held constant — the best group's weight is exactly 0 under s-CDF — and
 * their sum.
 */
export function fairnessWeightedGradient(
    config: LlamaConfig,
    weights: LlamaWeights,
    rope: RopeTable,
    groupBatches: readonly (readonly (readonly TrainingSequence[])[])[],
    method: MitigationMethod
): WeightedGradient {
    const parts = groupBatches.map((miniBatches) => meanLossAndGradients(config, weights, rope, miniBatches));
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
    return {
        divergences,
        weights: groupWeights,
        gradients,
        objective: unfairness(divergences),
        positions: parts.reduce((sum, part) => sum + part.weightTotal, 0)
    };
}

/** Loss and gradients of one group, averaged over its mini-batches (one mini-batch: exactly its own). */
function meanLossAndGradients(
    config: LlamaConfig,
    weights: LlamaWeights,
    rope: RopeTable,
    miniBatches: readonly (readonly TrainingSequence[])[]
) {
    const parts = miniBatches.map((batch) => llamaLossAndGradients(config, weights, rope, batch));
    if (parts.length === 1) return parts[0];
    const gradients = zeroLlamaWeights(config);
    for (const part of parts)
        for (const [name, total] of gradients) {
            const gradient = part.gradients.get(name)!;
            for (let i = 0; i < total.length; i++) total[i] += gradient[i] / parts.length;
        }
    return {
        loss: parts.reduce((sum, part) => sum + part.loss, 0) / parts.length,
        gradients,
        weightTotal: parts.reduce((sum, part) => sum + part.weightTotal, 0)
    };
}
