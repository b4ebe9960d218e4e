import type {LlamaTensorShape} from "../model/llamaTensorLayout.js";
import {type Eagle3Config, eagle3FeatureWidth, eagle3HeadDimension} from "./Eagle3Config.js";

/**
 * Every tensor of an EAGLE-3 head, named as llama.cpp's eagle3 loader names them, as row-major
 * W[out][in] matrices (ggml dimensions [columns, rows]). The head carries its own token_embd and
 * output, so llama.cpp needs no target context for them; blk.0.attn_norm_2 is EAGLE-3's hidden_norm
 * (on g), and the attention projections read the 2·d concat.
 */
export function eagle3TensorLayout(config: Eagle3Config): LlamaTensorShape[] {
    const d = config.embeddingLength;
    const kvWidth = eagle3HeadDimension(config) * config.headCountKv;
    const ff = config.feedForwardLength;
    return [
        {name: "token_embd.weight", rows: config.vocabularySize, columns: d},
        {name: "fc.weight", rows: d, columns: eagle3FeatureWidth(config)},
        {name: "blk.0.attn_norm.weight", rows: 1, columns: d},
        {name: "blk.0.attn_norm_2.weight", rows: 1, columns: d},
        {name: "blk.0.attn_q.weight", rows: d, columns: 2 * d},
        {name: "blk.0.attn_k.weight", rows: kvWidth, columns: 2 * d},
        {name: "blk.0.attn_v.weight", rows: kvWidth, columns: 2 * d},
        {name: "blk.0.attn_output.weight", rows: d, columns: d},
        {name: "blk.0.ffn_norm.weight", rows: 1, columns: d},
        {name: "blk.0.ffn_gate.weight", rows: ff, columns: d},
        {name: "blk.0.ffn_up.weight", rows: ff, columns: d},
        {name: "blk.0.ffn_down.weight", rows: d, columns: ff},
        {name: "output_norm.weight", rows: 1, columns: d},
        {name: "output.weight", rows: config.vocabularySize, columns: d}
    ];
}
