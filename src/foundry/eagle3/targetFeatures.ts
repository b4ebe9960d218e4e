import {InvalidInputError, TokenOutOfRangeError} from "../../errors.js";
import {causalAttentionForward} from "../model/causalAttention.js";
import {type LlamaConfig, headDimension} from "../model/LlamaConfig.js";
import {type LlamaWeights, tensorOf} from "../model/LlamaWeights.js";
import {rmsNormForward} from "../model/rmsNorm.js";
import type {RopeTable} from "../model/RopeTable.js";
import {swigluForward} from "../model/swiglu.js";
import {blockedLinearForward} from "./blockedLinear.js";

/**
 * The target's hidden states that feed an EAGLE-3 head: for every position, the inputs of target
 * layers `layers` (what llama.cpp's llama_get_embeddings_layer_inp returns: layer 0's input is the
 * token embedding, layer l's the residual stream after l blocks), side by side in `layers` order.
 * Rows: tokens.length, each layers.length · embeddingLength wide.
 */
export function targetFeatures(
    config: LlamaConfig,
    weights: LlamaWeights,
    rope: RopeTable,
    tokens: readonly number[],
    layers: readonly number[]
): Float64Array {
    for (const layer of layers)
        if (!Number.isSafeInteger(layer) || layer < 0 || layer >= config.blockCount)
            throw new InvalidInputError(`layer ${layer} is not an input of the target's ${config.blockCount} layers`, "targetLayers");
    const inputs = blockInputs(config, weights, rope, tokens, Math.max(...layers));
    const d = config.embeddingLength;
    const width = layers.length * d;
    const features = new Float64Array(tokens.length * width);
    layers.forEach((layer, slot) => {
        const input = inputs[layer];
        for (let row = 0; row < tokens.length; row++) features.set(input.subarray(row * d, (row + 1) * d), row * width + slot * d);
    });
    return features;
}

/**
 * The residual stream entering blocks 0..highest: llamaForward's block inputs (the same sums in the
 * same order, so equal to the last bit), without the blocks above `highest` or the LM head, and with
 * the blocked matrix product.
 */
function blockInputs(
    config: LlamaConfig,
    weights: LlamaWeights,
    rope: RopeTable,
    tokens: readonly number[],
    highest: number
): Float64Array[] {
    const length = tokens.length;
    const d = config.embeddingLength;
    if (length === 0) throw new InvalidInputError("a sequence needs at least one token", "tokens");
    if (length > config.contextLength)
        throw new InvalidInputError(`${length} tokens exceed the context length ${config.contextLength}`, "tokens");
    const embedding = tensorOf(weights, "token_embd.weight");
    let x: Float64Array = new Float64Array(length * d);
    tokens.forEach((token, position) => {
        if (!Number.isInteger(token) || token < 0 || token >= config.vocabularySize)
            throw new TokenOutOfRangeError(`token ${token} is outside [0, ${config.vocabularySize})`, `tokens[${position}]`);
        x.set(embedding.subarray(token * d, (token + 1) * d), position * d);
    });
    const inputs: Float64Array[] = [x];
    for (let block = 0; block < highest; block++) {
        x = blockForward(config, weights, rope, x, length, block);
        inputs.push(x);
    }
    return inputs;
}

/** One llama block: x + attention(RMSNorm(x)), then + SwiGLU(RMSNorm(·)), as llamaForward computes it. */
function blockForward(
    config: LlamaConfig,
    weights: LlamaWeights,
    rope: RopeTable,
    input: Float64Array,
    length: number,
    block: number
): Float64Array {
    const d = config.embeddingLength;
    const ff = config.feedForwardLength;
    const shape = {length, headCount: config.headCount, headCountKv: config.headCountKv, headDimension: headDimension(config)};
    const kvWidth = shape.headDimension * config.headCountKv;
    const tensor = (name: string): Float64Array => tensorOf(weights, `blk.${block}.${name}.weight`);
    const attentionNorm = rmsNormForward(input, tensor("attn_norm"), length, d, config.rmsNormEpsilon).output;
    const queries = blockedLinearForward(attentionNorm, tensor("attn_q"), length, d, d);
    const keys = blockedLinearForward(attentionNorm, tensor("attn_k"), length, d, kvWidth);
    const values = blockedLinearForward(attentionNorm, tensor("attn_v"), length, d, kvWidth);
    rope.rotate(queries, length, config.headCount);
    rope.rotate(keys, length, config.headCountKv);
    const attention = causalAttentionForward(queries, keys, values, shape).output;
    const projected = blockedLinearForward(attention, tensor("attn_output"), length, d, d);
    const afterAttention = new Float64Array(length * d);
    for (let i = 0; i < afterAttention.length; i++) afterAttention[i] = input[i] + projected[i];
    const feedForwardNorm = rmsNormForward(afterAttention, tensor("ffn_norm"), length, d, config.rmsNormEpsilon).output;
    const gate = blockedLinearForward(feedForwardNorm, tensor("ffn_gate"), length, d, ff);
    const up = blockedLinearForward(feedForwardNorm, tensor("ffn_up"), length, d, ff);
    const down = blockedLinearForward(swigluForward(gate, up), tensor("ffn_down"), length, ff, d);
    const output = new Float64Array(length * d);
    for (let i = 0; i < output.length; i++) output[i] = afterAttention[i] + down[i];
    return output;
}
