import {seededNormalWeights} from "../model/initializeLlamaWeights.js";
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
    return seededNormalWeights(eagle3TensorLayout(config), options, Math.SQRT2);
}
