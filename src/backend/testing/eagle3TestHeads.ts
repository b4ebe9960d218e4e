import {familyEagle3Config} from "../../foundry/eagle3/familyEagle3Config.js";
import {eagle3GgufMetadata} from "../../foundry/eagle3/eagle3GgufMetadata.js";
import {eagle3TensorLayout} from "../../foundry/eagle3/eagle3TensorLayout.js";
import {initializeEagle3Weights} from "../../foundry/eagle3/initializeEagle3Weights.js";
import type {LlamaConfig} from "../../foundry/model/LlamaConfig.js";
import {readLlamaGguf} from "../../foundry/model/readLlamaGguf.js";
import {ByteTokenizer} from "../../gguf/ByteTokenizer.js";
import {GgmlTensorType} from "../../gguf/GgmlTensorType.js";
import {GgufWriter} from "../../gguf/GgufWriter.js";

export interface Eagle3TestHeadOptions {
    readonly seed: number;
    /**
     * Leave out token_embd and output, as converted heads of Llama 3.1 8B do: llama.cpp then takes
     * the target's (its context is the head's ctx_other). Default false.
     */
    readonly borrowEmbeddings?: boolean;
    /** The target shape the head is made for, when it is not the file's (a head made for another target). */
    readonly targetShape?: Partial<LlamaConfig>;
    /** Standard deviation of the matrices (initializeEagle3Weights). */
    readonly standardDeviation?: number;
}

/**
 * Writes an untrained (seeded) EAGLE-3 head for the byte-tokenizer llama target at `targetPath`, with
 * the foundry's config, layout and metadata: what the runtime tests draft with before and besides the
 * trained head of models/eagle3.
 */
export async function writeEagle3TestHead(path: string, targetPath: string, options: Eagle3TestHeadOptions): Promise<void> {
    const target = {...readLlamaGguf(targetPath).config, ...options.targetShape};
    const config = familyEagle3Config(target);
    const weights = initializeEagle3Weights(config, {seed: options.seed, standardDeviation: options.standardDeviation});
    const writer = new GgufWriter();
    for (const entry of eagle3GgufMetadata(config, new ByteTokenizer())) writer.set(entry.key, entry.type, entry.value);
    for (const shape of eagle3TensorLayout(config)) {
        if (options.borrowEmbeddings === true && (shape.name === "token_embd.weight" || shape.name === "output.weight")) continue;
        const values = Float32Array.from(weights.get(shape.name)!);
        writer.addTensor(shape.name, shape.rows === 1 ? [shape.columns] : [shape.columns, shape.rows], GgmlTensorType.F32, values);
    }
    await writer.writeFile(path);
}
