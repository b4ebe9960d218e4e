import {InvalidInputError} from "../../errors.js";
import type {LlamaWeights} from "../model/LlamaWeights.js";
import {tensorOf} from "../model/LlamaWeights.js";
import type {Eagle3Config} from "./Eagle3Config.js";
import {eagle3TensorLayout} from "./eagle3TensorLayout.js";

/** A head's weights (or gradients, or optimizer moments) by GGUF tensor name, in eagle3TensorLayout's shapes. */
export type Eagle3Weights = LlamaWeights;

/** Zero-filled tensors for every name of the layout: gradient accumulators and optimizer state. */
export function zeroEagle3Weights(config: Eagle3Config): Eagle3Weights {
    return new Map(eagle3TensorLayout(config).map((shape) => [shape.name, new Float64Array(shape.rows * shape.columns)]));
}

/** Throws unless `weights` holds exactly the layout's tensors with the layout's sizes. */
export function checkEagle3Weights(config: Eagle3Config, weights: Eagle3Weights): void {
    const layout = eagle3TensorLayout(config);
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
