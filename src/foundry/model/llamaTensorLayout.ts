import {type LlamaConfig, headDimension} from "./LlamaConfig.js";

/**
 * One weight tensor: its GGUF name and its shape as a row-major matrix `rows × columns` (a vector
 * has rows 1). Matrices are stored as llama.cpp stores them, W[out][in] with ggml dimensions
 * [columns, rows] = [fan_in, fan_out], so y = W·x reads contiguous rows and export is a plain copy.
 */
export interface LlamaTensorShape {
    readonly name: string;
    readonly rows: number;
    readonly columns: number;
}

/** Every tensor of a model in GGUF order: token_embd, per block attn/ffn, output_norm, output (unless tied). */
export function llamaTensorLayout(config: LlamaConfig): LlamaTensorShape[] {
    const d = config.embeddingLength;
    const kvWidth = headDimension(config) * config.headCountKv;
    const ff = config.feedForwardLength;
    const layout: LlamaTensorShape[] = [{name: "token_embd.weight", rows: config.vocabularySize, columns: d}];
    for (let block = 0; block < config.blockCount; block++) {
        const prefix = `blk.${block}.`;
        layout.push(
            {name: `${prefix}attn_norm.weight`, rows: 1, columns: d},
            {name: `${prefix}attn_q.weight`, rows: d, columns: d},
            {name: `${prefix}attn_k.weight`, rows: kvWidth, columns: d},
            {name: `${prefix}attn_v.weight`, rows: kvWidth, columns: d},
            {name: `${prefix}attn_output.weight`, rows: d, columns: d},
            {name: `${prefix}ffn_norm.weight`, rows: 1, columns: d},
            {name: `${prefix}ffn_gate.weight`, rows: ff, columns: d},
            {name: `${prefix}ffn_up.weight`, rows: ff, columns: d},
            {name: `${prefix}ffn_down.weight`, rows: d, columns: ff}
        );
    }
    layout.push({name: "output_norm.weight", rows: 1, columns: d});
    if (!config.tiedOutput) layout.push({name: "output.weight", rows: config.vocabularySize, columns: d});
    return layout;
}

/** Total number of weights. */
export function llamaParameterCount(config: LlamaConfig): number {
    return llamaTensorLayout(config).reduce((sum, shape) => sum + shape.rows * shape.columns, 0);
}
