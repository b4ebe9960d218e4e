import {ModelLoadError} from "../../errors.js";
import {GgufReader} from "../../gguf/GgufReader.js";
import {checkEagle3Config, type Eagle3Config} from "./Eagle3Config.js";
import {eagle3Architecture} from "./eagle3GgufMetadata.js";
import {eagle3TensorLayout} from "./eagle3TensorLayout.js";
import type {Eagle3Weights} from "./Eagle3Weights.js";

export interface Eagle3GgufContents {
    readonly config: Eagle3Config;
    /** Every tensor decoded to float64 (exact for F32). */
    readonly weights: Eagle3Weights;
}

/**
 * Reads an EAGLE-3 head written by writeEagle3Gguf back into its config and weights. A head without
 * its own token_embd / output (one that borrows the target's, as converted Llama 3.1 8B heads do) or
 * with a reduced draft vocabulary (d2t) is not a shape the foundry trains, and is refused by name.
 */
export function readEagle3Gguf(path: string): Eagle3GgufContents {
    const reader = GgufReader.open(path);
    try {
        const value = (key: string): unknown => reader.metadata.get(key)?.value;
        const number = (key: string): number => {
            const entry = value(key);
            if (typeof entry !== "number" && typeof entry !== "bigint")
                throw new ModelLoadError("corrupt", `missing numeric metadata ${key}`, key);
            return Number(entry);
        };
        if (value("general.architecture") !== eagle3Architecture)
            throw new ModelLoadError(
                "corrupt",
                `expected an eagle3 head, found ${String(value("general.architecture"))}`,
                "general.architecture"
            );
        const names = new Set(reader.tensors.map((tensor) => tensor.name));
        for (const name of ["token_embd.weight", "output.weight"])
            if (!names.has(name)) throw new ModelLoadError("corrupt", `the head has no ${name} of its own`, name);
        if (names.has("d2t")) throw new ModelLoadError("corrupt", "heads with a reduced draft vocabulary (d2t) are not read", "d2t");
        const layers = value(`${eagle3Architecture}.target_layers`);
        const ids =
            typeof layers === "object" && layers !== null && "items" in layers
                ? (layers as {items: unknown[]}).items.map((id) => Number(id))
                : [];
        if (ids.length !== 3) throw new ModelLoadError("corrupt", "needs three target layer ids", `${eagle3Architecture}.target_layers`);
        const key = (name: string): string => `${eagle3Architecture}.${name}`;
        const config: Eagle3Config = {
            targetLayers: [ids[0], ids[1], ids[2]],
            targetHiddenSize: number(key("target_hidden_size")),
            vocabularySize: number(key("vocab_size")),
            embeddingLength: number(key("embedding_length")),
            headCount: number(key("attention.head_count")),
            headCountKv: reader.metadata.has(key("attention.head_count_kv"))
                ? number(key("attention.head_count_kv"))
                : number(key("attention.head_count")),
            feedForwardLength: number(key("feed_forward_length")),
            contextLength: number(key("context_length")),
            rmsNormEpsilon: number(key("attention.layer_norm_rms_epsilon")),
            ropeFreqBase: reader.metadata.has(key("rope.freq_base")) ? number(key("rope.freq_base")) : 10000
        };
        checkEagle3Config(config);
        const weights: Eagle3Weights = new Map();
        for (const shape of eagle3TensorLayout(config)) {
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
