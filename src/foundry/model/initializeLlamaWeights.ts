import {Random} from "../../random/Random.js";
import {checkLlamaConfig, type LlamaConfig} from "./LlamaConfig.js";
import {type LlamaTensorShape, llamaTensorLayout} from "./llamaTensorLayout.js";
import type {LlamaWeights} from "./LlamaWeights.js";

export interface LlamaInitialization {
    readonly seed: number;
    /** Standard deviation of every matrix entry. Default 0.02 (GPT-2's). */
    readonly standardDeviation?: number;
    /** Standard deviation of the RMSNorm gains around 1. Default 0: all gains exactly 1. */
    readonly gainJitter?: number;
}

/**
 * Seeded normal weights: matrices N(0, σ²), residual writes (attn_output, ffn_down) scaled by
 * 1/sqrt(2·blocks) as in GPT-2 so the residual stream's variance does not grow with depth, norm
 * gains 1 (+ optional jitter, which the gradient check uses so a gain of 1 hides no bug). Every value
 * is rounded to float32, so the F32 GGUF export holds exactly the weights the reference computes with.
 */
export function initializeLlamaWeights(config: LlamaConfig, options: LlamaInitialization): LlamaWeights {
    checkLlamaConfig(config);
    return seededNormalWeights(llamaTensorLayout(config), options, Math.sqrt(2 * config.blockCount));
}

/**
 * The seeded normal weights of a tensor layout: matrices N(0, σ²), the residual writes (attn_output,
 * ffn_down) divided by `residualDivisor`, norm gains (single-row tensors) 1 + N(0, jitter²), every value
 * rounded to float32. Shared by the llama reference model and the EAGLE-3 head.
 */
export function seededNormalWeights(
    layout: readonly LlamaTensorShape[],
    options: LlamaInitialization,
    residualDivisor: number
): Map<string, Float64Array> {
    const random = new Random(options.seed);
    const deviation = options.standardDeviation ?? 0.02;
    const jitter = options.gainJitter ?? 0;
    const weights = new Map<string, Float64Array>();
    for (const shape of layout) {
        const values = new Float64Array(shape.rows * shape.columns);
        const vector = shape.rows === 1;
        const residualWrite = shape.name.endsWith("attn_output.weight") || shape.name.endsWith("ffn_down.weight");
        const scale = vector ? jitter : residualWrite ? deviation / residualDivisor : deviation;
        for (let i = 0; i < values.length; i++) values[i] = Math.fround((vector ? 1 : 0) + scale * standardNormal(random));
        weights.set(shape.name, values);
    }
    return weights;
}

/** Box–Muller; 1 − u keeps the logarithm's argument in (0, 1]. */
function standardNormal(random: Random): number {
    const u = 1 - random.nextDouble();
    const v = random.nextDouble();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}
