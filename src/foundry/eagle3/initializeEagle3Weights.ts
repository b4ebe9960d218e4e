import {Random} from "../../random/Random.js";
import {checkEagle3Config, type Eagle3Config} from "./Eagle3Config.js";
import {eagle3TensorLayout} from "./eagle3TensorLayout.js";
import type {Eagle3Weights} from "./Eagle3Weights.js";

export interface Eagle3Initialization {
    readonly seed: number;
    /** Standard deviation of every matrix entry. Default 0.02. */
    readonly standardDeviation?: number;
    /** Standard deviation of the RMSNorm gains around 1. Default 0: all gains exactly 1. */
    readonly gainJitter?: number;
}

/**
 * Seeded normal weights, deterministic in the seed: matrices N(0, σ²), the residual writes
 * (attn_output, ffn_down) scaled by 1/√2 as for one block, norm gains 1 (+ optional jitter). Every
 * value is rounded to float32, so the F32 GGUF export holds exactly the weights the reference uses.
 */
export function initializeEagle3Weights(config: Eagle3Config, options: Eagle3Initialization): Eagle3Weights {
    checkEagle3Config(config);
    const random = new Random(options.seed);
    const deviation = options.standardDeviation ?? 0.02;
    const jitter = options.gainJitter ?? 0;
    const weights: Eagle3Weights = new Map();
    for (const shape of eagle3TensorLayout(config)) {
        const values = new Float64Array(shape.rows * shape.columns);
        const vector = shape.rows === 1;
        const residualWrite = shape.name.endsWith("attn_output.weight") || shape.name.endsWith("ffn_down.weight");
        const scale = vector ? jitter : residualWrite ? deviation / Math.SQRT2 : deviation;
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
