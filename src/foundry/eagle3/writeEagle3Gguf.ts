import type {ByteTokenizer} from "../../gguf/ByteTokenizer.js";
import {GgmlTensorType} from "../../gguf/GgmlTensorType.js";
import {GgufWriter} from "../../gguf/GgufWriter.js";
import {tensorOf} from "../model/LlamaWeights.js";
import {checkEagle3Config, type Eagle3Config} from "./Eagle3Config.js";
import {eagle3GgufMetadata} from "./eagle3GgufMetadata.js";
import {eagle3TensorLayout} from "./eagle3TensorLayout.js";
import {checkEagle3Weights, type Eagle3Weights} from "./Eagle3Weights.js";

export interface Eagle3GgufOptions {
    /** general.name. */
    readonly name?: string;
    /** Storage type of the matrices; norm gains always stay F32. Default F32. */
    readonly weightType?: GgmlTensorType;
}

/**
 * Writes an EAGLE-3 head that llama.cpp loads as LLM_ARCH_EAGLE3 (`--spec-type draft-eagle3`, or
 * specgate's eagle3 drafter): eagle3GgufMetadata, then every tensor of eagle3TensorLayout. Values are
 * rounded to float32 (or quantised); the write is atomic.
 */
export async function writeEagle3Gguf(
    path: string,
    config: Eagle3Config,
    weights: Eagle3Weights,
    tokenizer: ByteTokenizer,
    options: Eagle3GgufOptions = {}
): Promise<void> {
    checkEagle3Config(config);
    checkEagle3Weights(config, weights);
    const weightType = options.weightType ?? GgmlTensorType.F32;
    const writer = new GgufWriter();
    for (const entry of eagle3GgufMetadata(config, tokenizer, {name: options.name, weightType}))
        writer.set(entry.key, entry.type, entry.value);
    for (const shape of eagle3TensorLayout(config)) {
        const values = Float32Array.from(tensorOf(weights, shape.name));
        if (shape.rows === 1) writer.addTensor(shape.name, [shape.columns], GgmlTensorType.F32, values);
        else writer.addTensor(shape.name, [shape.columns, shape.rows], weightType, values);
    }
    await writer.writeFile(path);
}
