import {GgmlTensorType} from "../../gguf/GgmlTensorType.js";
import {GgufReader} from "../../gguf/GgufReader.js";
import {GgufValueType} from "../../gguf/GgufValueType.js";
import {GgufWriter} from "../../gguf/GgufWriter.js";
import type {LlamaConfig} from "../../foundry/model/LlamaConfig.js";
import {llamaTensorLayout} from "../../foundry/model/llamaTensorLayout.js";
import {checkLlamaWeights, type LlamaWeights, tensorOf} from "../../foundry/model/LlamaWeights.js";

/** llama_ftype ALL_F32. */
const allFloat32FileType = 0;

/**
 * Writes the fine-tuned drafter next to the one it came from: every metadata entry of the input
 * copied in order (tokenizer, chat template, hyperparameters — so the pair's vocabulary identity is
 * unchanged) except general.file_type, which becomes F32 because every tensor is written as F32;
 * tensors outside the reference model's layout are carried over (as F32) so llama.cpp finds
 * whatever else the input shipped. Atomic, like every model write.
 */
export async function writeDrafterGguf(inputPath: string, outputPath: string, config: LlamaConfig, weights: LlamaWeights): Promise<void> {
    checkLlamaWeights(config, weights);
    const reader = GgufReader.open(inputPath);
    try {
        const writer = new GgufWriter({alignment: reader.alignment});
        for (const [key, entry] of reader.metadata) {
            if (key === "general.alignment") continue; // the writer sets it itself when it is not the default
            if (key === "general.file_type") writer.set(key, GgufValueType.Uint32, allFloat32FileType);
            else writer.set(key, entry.type, entry.value);
        }
        const layout = llamaTensorLayout(config);
        const shapes = new Map(layout.map((shape) => [shape.name, shape]));
        for (const tensor of reader.tensors) {
            const shape = shapes.get(tensor.name);
            if (shape === undefined) {
                writer.addTensor(tensor.name, tensor.dimensions, GgmlTensorType.F32, reader.readTensor(tensor.name));
                continue;
            }
            const values = Float32Array.from(tensorOf(weights, shape.name));
            writer.addTensor(shape.name, shape.rows === 1 ? [shape.columns] : [shape.columns, shape.rows], GgmlTensorType.F32, values);
        }
        await writer.writeFile(outputPath);
    } finally {
        reader.close();
    }
}
