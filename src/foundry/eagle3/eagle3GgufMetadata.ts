import type {ByteTokenizer} from "../../gguf/ByteTokenizer.js";
import type {GgmlTensorType} from "../../gguf/GgmlTensorType.js";
import {type GgufKeyValue, llamaGgufMetadata} from "../../gguf/llamaGgufMetadata.js";
import {GgufValueType} from "../../gguf/GgufValueType.js";
import type {Eagle3Config} from "./Eagle3Config.js";

/** general.architecture of an EAGLE-3 head, and the prefix of its hyperparameter keys. */
export const eagle3Architecture = "eagle3";

/**
 * The metadata llama.cpp's eagle3 loader reads: the llama hyperparameters under `eagle3.*` (one
 * block), the target's vocabulary (speculative decoding checks that draft and target tokenize
 * alike), and the EAGLE-3 keys: `eagle3.target_layers` (three INT32 layer ids, as the converter's
 * add_target_layers writes them), `eagle3.target_hidden_size`, and norm_before_residual /
 * norm_before_fc, both false (the original EAGLE-3 recipe: the raw g is the residual, fc reads
 * the features unnormalised).
 */
export function eagle3GgufMetadata(
    config: Eagle3Config,
    tokenizer: ByteTokenizer,
    options: {name?: string; weightType?: GgmlTensorType} = {}
): GgufKeyValue[] {
    const llama = llamaGgufMetadata(
        {
            contextLength: config.contextLength,
            embeddingLength: config.embeddingLength,
            blockCount: 1,
            feedForwardLength: config.feedForwardLength,
            headCount: config.headCount,
            headCountKv: config.headCountKv,
            layerNormRmsEpsilon: config.rmsNormEpsilon,
            ropeFreqBase: config.ropeFreqBase,
            vocabularySize: config.vocabularySize
        },
        tokenizer,
        {name: options.name ?? "specgate-eagle3", weightType: options.weightType}
    );
    const renamed = llama.map((entry): GgufKeyValue => {
        if (entry.key === "general.architecture") return {...entry, value: eagle3Architecture};
        if (entry.key.startsWith("llama.")) return {...entry, key: `${eagle3Architecture}.${entry.key.slice("llama.".length)}`};
        return entry;
    });
    return [
        ...renamed,
        {
            key: `${eagle3Architecture}.target_layers`,
            type: GgufValueType.Array,
            value: {itemType: GgufValueType.Int32, items: [...config.targetLayers]}
        },
        {key: `${eagle3Architecture}.target_hidden_size`, type: GgufValueType.Uint32, value: config.targetHiddenSize},
        {key: `${eagle3Architecture}.norm_before_residual`, type: GgufValueType.Bool, value: false},
        {key: `${eagle3Architecture}.norm_before_fc`, type: GgufValueType.Bool, value: false}
    ];
}
