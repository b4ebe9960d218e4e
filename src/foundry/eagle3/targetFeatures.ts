import {InvalidInputError} from "../../errors.js";
import type {LlamaConfig} from "../model/LlamaConfig.js";
import {llamaForward} from "../model/llamaForward.js";
import type {LlamaWeights} from "../model/LlamaWeights.js";
import type {RopeTable} from "../model/RopeTable.js";

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
    // Only the blocks below the highest layer are run; its input is then the truncated model's final residual.
    const highest = Math.max(...layers);
    const {activations} = llamaForward({...config, blockCount: highest}, weights, rope, tokens);
    const d = config.embeddingLength;
    const width = layers.length * d;
    const features = new Float64Array(tokens.length * width);
    layers.forEach((layer, slot) => {
        const input = layer === highest ? activations.finalInput : activations.blocks[layer].input;
        for (let row = 0; row < tokens.length; row++) features.set(input.subarray(row * d, (row + 1) * d), row * width + slot * d);
    });
    return features;
}
