import {InvalidInputError} from "../../errors.js";
import type {LlamaConfig} from "./LlamaConfig.js";
import {llamaTensorLayout} from "./llamaTensorLayout.js";

/** A model's weights (or gradients, or optimizer moments) by GGUF tensor name, in llamaTensorLayout's shapes. */
export type LlamaWeights = Map<string, Float64Array>;

/** Zero-filled tensors for every name of the layout: gradient accumulators and optimizer state. */
export function zeroLlamaWeights(config: LlamaConfig): LlamaWeights {
    return new Map(llamaTensorLayout(config).map((shape) => [shape.name, new Float64Array(shape.rows * shape.columns)]));
}

/** The tensor `name`, or an InvalidInputError saying which is missing. */
export function tensorOf(weights: LlamaWeights, name: string): Float64Array {
    const tensor = weights.get(name);
    if (tensor === undefined) throw new InvalidInputError(`missing tensor ${name}`, "weights");
    return tensor;
}

/** Throws unless `weights` holds exactly the layout's tensors with the layout's sizes. */
export function checkLlamaWeights(config: LlamaConfig, weights: LlamaWeights): void {
    const layout = llamaTensorLayout(config);
    for (const shape of layout) {
        const tensor = tensorOf(weights, shape.name);
        if (tensor.length !== shape.rows * shape.columns)
            throw new InvalidInputError(
                `expected ${shape.rows}×${shape.columns} = ${shape.rows * shape.columns} values, got ${tensor.length}`,
                shape.name
            );
    }
    if (weights.size !== layout.length) {
        const expected = new Set(layout.map((shape) => shape.name));
        const extra = [...weights.keys()].filter((name) => !expected.has(name));
        throw new InvalidInputError(`unexpected tensors: ${extra.join(", ")}`, "weights");
    }
}
