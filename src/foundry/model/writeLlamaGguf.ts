import type {ByteTokenizer} from "../../gguf/ByteTokenizer.js";
import {GgmlTensorType} from "../../gguf/GgmlTensorType.js";
import {GgufWriter} from "../../gguf/GgufWriter.js";
import {llamaGgufMetadata} from "../../gguf/llamaGgufMetadata.js";
import {checkLlamaConfig, type LlamaConfig} from "./LlamaConfig.js";
import {llamaTensorLayout} from "./llamaTensorLayout.js";
import {checkLlamaWeights, type LlamaWeights, tensorOf} from "./LlamaWeights.js";

export interface LlamaGgufOptions {
    /** general.name. */
    readonly name?: string;
    /** Storage type of the matrices; norm gains always stay F32 (llama.cpp requires it). Default F32. */
    readonly weightType?: GgmlTensorType;
}

/**
 * Writes a llama GGUF that llama.cpp loads as LLM_ARCH_LLAMA: the project's llama metadata and
 * ByteTokenizer vocabulary (src/gguf/llamaGgufMetadata.ts), and every tensor of the layout, a
 * rows × columns matrix given ggml dimensions [columns, rows]. A tied model writes no output.weight,
 * and llama.cpp then reuses token_embd.weight for the logits. Values are rounded to float32 (or
 * quantised); the write is atomic.
 */
export async function writeLlamaGguf(
    path: string,
    config: LlamaConfig,
    weights: LlamaWeights,
    tokenizer: ByteTokenizer,
    options: LlamaGgufOptions = {}
): Promise<void> {
    checkLlamaConfig(config);
    checkLlamaWeights(config, weights);
    const weightType = options.weightType ?? GgmlTensorType.F32;
    const writer = new GgufWriter();
    const hyperparameters = {
        contextLength: config.contextLength,
        embeddingLength: config.embeddingLength,
        blockCount: config.blockCount,
        feedForwardLength: config.feedForwardLength,
        headCount: config.headCount,
        headCountKv: config.headCountKv,
        layerNormRmsEpsilon: config.rmsNormEpsilon,
        ropeFreqBase: config.ropeFreqBase,
        vocabularySize: config.vocabularySize
    };
    for (const entry of llamaGgufMetadata(hyperparameters, tokenizer, {name: options.name ?? "specgate-foundry", weightType}))
        writer.set(entry.key, entry.type, entry.value);
    for (const shape of llamaTensorLayout(config)) {
        const values = Float32Array.from(tensorOf(weights, shape.name));
        if (shape.rows === 1) writer.addTensor(shape.name, [shape.columns], GgmlTensorType.F32, values);
        else writer.addTensor(shape.name, [shape.columns, shape.rows], weightType, values);
    }
    await writer.writeFile(path);
}
