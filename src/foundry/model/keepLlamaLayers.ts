import {InvalidInputError} from "../../errors.js";
import type {LlamaConfig} from "./LlamaConfig.js";
import {checkLlamaWeights, type LlamaWeights, tensorOf} from "./LlamaWeights.js";
import {llamaTensorLayout} from "./llamaTensorLayout.js";

/**
 * A shallower model made of some of a model's blocks, in the order given, with its embeddings,
 * final norm and output head: the self-speculative drafter (Draft & Verify, LayerSkip), which starts
 * from the target's own representation instead of random weights and is fine-tuned from there
 * (draft-shallow in the family recipe). Block `layers[i]` becomes block i; everything else is copied.
 */
export function keepLlamaLayers(
    config: LlamaConfig,
    weights: LlamaWeights,
    layers: readonly number[]
): {config: LlamaConfig; weights: LlamaWeights} {
    checkLlamaWeights(config, weights);
    if (layers.length === 0) throw new InvalidInputError("keep at least one block", "layers");
    for (const layer of layers)
        if (!Number.isSafeInteger(layer) || layer < 0 || layer >= config.blockCount)
            throw new InvalidInputError(`block ${layer} is not one of the model's ${config.blockCount} blocks`, "layers");
    if (new Set(layers).size !== layers.length) throw new InvalidInputError(`a block is listed twice in ${layers.join(",")}`, "layers");
    const kept: LlamaConfig = {...config, blockCount: layers.length};
    const renamed = (name: string): string => {
        const match = /^blk\.(\d+)\.(.+)$/.exec(name);
        return match === null ? name : `blk.${layers[Number(match[1])]}.${match[2]}`;
    };
    // A copy, so the source model's arrays are never shared with (and trained through) the new one.
    const keptWeights: LlamaWeights = new Map(
        llamaTensorLayout(kept).map((shape) => [shape.name, Float64Array.from(tensorOf(weights, renamed(shape.name)))])
    );
    return {config: kept, weights: keptWeights};
}
