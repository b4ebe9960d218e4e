import {InvalidInputError} from "../../errors.js";
import type {LlamaConfig} from "../model/LlamaConfig.js";
import {type LlamaWeights, tensorOf} from "../model/LlamaWeights.js";
import type {Eagle3Config} from "./Eagle3Config.js";
import type {Eagle3Weights} from "./Eagle3Weights.js";
import {initializeEagle3Weights} from "./initializeEagle3Weights.js";

/**
 * A head that starts as the target's last extracted block: token_embd, output_norm and output are the
 * target's (EAGLE-3 heads commonly share the target's embeddings and LM head); fc passes the highest
 * extracted layer through unchanged (identity on its slot); and the decoder's g half (attn_norm_2,
 * the g columns of Wq/Wk/Wv, Wo, the feed-forward network) is that target block L. At initialisation
 * the head's pre-norm output is then the target's residual after block L, so the g it feeds itself
 * lives in the target's feature space from the first step. The token columns of Wq/Wk/Wv and fc's
 * other slots start at 0 (their gradients do not: their inputs are not 0); attn_norm keeps its seeded
 * initialisation.
 * Needs the head to have the target's width, heads and feed-forward size.
 */
export function initializeEagle3FromTarget(
    config: Eagle3Config,
    target: LlamaConfig,
    targetWeights: LlamaWeights,
    seed: number
): Eagle3Weights {
    for (const key of ["embeddingLength", "headCount", "headCountKv", "feedForwardLength", "vocabularySize"] as const)
        if (config[key] !== target[key])
            throw new InvalidInputError(`the head's ${key} ${config[key]} differs from the target's ${target[key]}`, key);
    const weights = initializeEagle3Weights(config, {seed});
    const d = config.embeddingLength;
    const highest = Math.max(...config.targetLayers);
    const slot = config.targetLayers.indexOf(highest);
    const source = (name: string): Float64Array => tensorOf(targetWeights, name);
    const block = (name: string): Float64Array => source(`blk.${highest}.${name}.weight`);
    weights.set("token_embd.weight", Float64Array.from(source("token_embd.weight")));
    weights.set("output_norm.weight", Float64Array.from(source("output_norm.weight")));
    weights.set("output.weight", Float64Array.from(source(target.tiedOutput ? "token_embd.weight" : "output.weight")));
    const fc = tensorOf(weights, "fc.weight");
    const featureWidth = config.targetLayers.length * config.targetHiddenSize;
    fc.fill(0);
    for (let row = 0; row < d; row++) fc[row * featureWidth + slot * config.targetHiddenSize + row] = 1;
    weights.set("blk.0.attn_norm_2.weight", Float64Array.from(block("attn_norm")));
    for (const name of ["attn_q", "attn_k", "attn_v"]) {
        const head = tensorOf(weights, `blk.0.${name}.weight`);
        const from = block(name);
        const rows = from.length / d;
        head.fill(0);
        for (let row = 0; row < rows; row++) head.set(from.subarray(row * d, (row + 1) * d), row * 2 * d + d);
    }
    for (const name of ["attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"])
        weights.set(`blk.0.${name}.weight`, Float64Array.from(block(name)));
    return weights;
}
