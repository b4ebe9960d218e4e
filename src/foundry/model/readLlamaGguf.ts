import {ModelLoadError} from "../../errors.js";
import {GgufReader} from "../../gguf/GgufReader.js";
import {checkLlamaConfig, type LlamaConfig} from "./LlamaConfig.js";
import {llamaTensorLayout} from "./llamaTensorLayout.js";
import type {LlamaWeights} from "./LlamaWeights.js";

export interface LlamaGgufContents {
    readonly config: LlamaConfig;
    /** Every tensor decoded to float64 (exact for F32; dequantised for F16 / Q8_0). */
    readonly weights: LlamaWeights;
}

/**
 * Reads a llama GGUF back into the reference model's config and weights, whoever wrote it: our
 * writer or llama.cpp's llama_model_save_to_file (what llama-finetune emits). The output is tied
 * when the file has no output.weight, as llama.cpp decides.
 */
export function readLlamaGguf(path: string): LlamaGgufContents {
    const reader = GgufReader.open(path);
    try {
        const number = (key: string): number => {
            const entry = reader.metadata.get(key);
            if (entry === undefined || (typeof entry.value !== "number" && typeof entry.value !== "bigint"))
                throw new ModelLoadError("corrupt", `missing numeric metadata ${key}`, key);
            return Number(entry.value);
        };
        const architecture = reader.metadata.get("general.architecture")?.value;
        if (architecture !== "llama")
            throw new ModelLoadError("corrupt", `expected a llama model, found ${String(architecture)}`, "general.architecture");
        const tokens = reader.metadata.get("tokenizer.ggml.tokens")?.value;
        const names = new Set(reader.tensors.map((tensor) => tensor.name));
        const config: LlamaConfig = {
            vocabularySize: typeof tokens === "object" ? tokens.items.length : number("llama.vocab_size"),
            embeddingLength: number("llama.embedding_length"),
            blockCount: number("llama.block_count"),
            headCount: number("llama.attention.head_count"),
            headCountKv: reader.metadata.has("llama.attention.head_count_kv")
                ? number("llama.attention.head_count_kv")
                : number("llama.attention.head_count"),
            feedForwardLength: number("llama.feed_forward_length"),
            contextLength: number("llama.context_length"),
            rmsNormEpsilon: number("llama.attention.layer_norm_rms_epsilon"),
            ropeFreqBase: reader.metadata.has("llama.rope.freq_base") ? number("llama.rope.freq_base") : 10000,
            tiedOutput: !names.has("output.weight")
        };
        checkLlamaConfig(config);
        const weights: LlamaWeights = new Map();
        for (const shape of llamaTensorLayout(config)) {
            const values = reader.readTensor(shape.name);
            if (values.length !== shape.rows * shape.columns)
                throw new ModelLoadError("corrupt", `expected ${shape.rows * shape.columns} values, found ${values.length}`, shape.name);
            weights.set(shape.name, Float64Array.from(values));
        }
        return {config, weights};
    } finally {
        reader.close();
    }
}
