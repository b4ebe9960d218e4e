import {InvalidInputError} from "../errors.js";
import type {GgmlTensorType} from "./GgmlTensorType.js";
import type {GgufReader} from "./GgufReader.js";
import {GgufValueType} from "./GgufValueType.js";
import {GgufWriter} from "./GgufWriter.js";
import {fileTypeByTensorType, type LlamaHyperparameters} from "./llamaGgufMetadata.js";

/** Keys the twin writes itself; every other general.*, llama.* and tokenizer.* key is the source's. */
const replacedKeys = new Set([
    "general.alignment",
    "general.name",
    "general.description",
    "general.file_type",
    "llama.embedding_length",
    "llama.block_count",
    "llama.feed_forward_length",
    "llama.attention.head_count",
    "llama.attention.head_count_kv",
    "llama.attention.layer_norm_rms_epsilon"
]);

const copiedPrefixes = ["general.", "llama.", "tokenizer."];

/**
 * The twin's metadata: the source's vocabulary, tokenizer, chat template, special tokens, context
 * length and RoPE settings copied as they are, the twin's shape and scaled epsilon, its own name,
 * description and file type.
 */
export function twinMetadata(
    reader: GgufReader,
    twin: LlamaHyperparameters,
    weightType: GgmlTensorType,
    labels: {name: string; description: string}
): GgufWriter {
    const writer = new GgufWriter();
    writer.setString("general.architecture", "llama");
    for (const [key, entry] of reader.metadata)
        if (!replacedKeys.has(key) && key !== "general.architecture" && copiedPrefixes.some((prefix) => key.startsWith(prefix)))
            writer.set(key, entry.type, entry.value);
    writer.setString("general.name", labels.name);
    writer.setString("general.description", labels.description);
    writer.setUint32("general.file_type", fileTypeByTensorType[weightType]);
    writer.setUint32("llama.embedding_length", twin.embeddingLength);
    writer.setUint32("llama.block_count", twin.blockCount);
    writer.setUint32("llama.feed_forward_length", twin.feedForwardLength);
    writer.setUint32("llama.attention.head_count", twin.headCount);
    writer.setUint32("llama.attention.head_count_kv", twin.headCountKv);
    writer.set("llama.attention.layer_norm_rms_epsilon", GgufValueType.Float32, twin.layerNormRmsEpsilon);
    return writer;
}

/** Refuses a source whose tensors are not exactly a plain llama's (biases, RoPE factors, experts…). */
export function checkSourceTensors(reader: GgufReader, source: LlamaHyperparameters, field: string): {hasOutput: boolean} {
    const d = source.embeddingLength;
    const kvWidth = (d / source.headCount) * source.headCountKv;
    const expected = new Map<string, number[]>([
        ["token_embd.weight", [d, source.vocabularySize]],
        ["output_norm.weight", [d]],
        ["output.weight", [d, source.vocabularySize]]
    ]);
    for (let block = 0; block < source.blockCount; block++)
        for (const [tensor, dimensions] of [
            ["attn_norm", [d]],
            ["attn_q", [d, d]],
            ["attn_k", [d, kvWidth]],
            ["attn_v", [d, kvWidth]],
            ["attn_output", [d, d]],
            ["ffn_norm", [d]],
            ["ffn_gate", [d, source.feedForwardLength]],
            ["ffn_up", [d, source.feedForwardLength]],
            ["ffn_down", [source.feedForwardLength, d]]
        ] as const)
            expected.set(`blk.${block}.${tensor}.weight`, [...dimensions]);
    for (const tensor of reader.tensors) {
        const dimensions = expected.get(tensor.name);
        if (dimensions === undefined) throw new InvalidInputError(`has a tensor ${tensor.name} a widened twin cannot reproduce`, field);
        if (tensor.dimensions.join(",") !== dimensions.join(","))
            throw new InvalidInputError(
                `tensor ${tensor.name} is [${tensor.dimensions.join(", ")}], expected [${dimensions.join(", ")}]`,
                field
            );
    }
    const present = new Set(reader.tensors.map((tensor) => tensor.name));
    for (const name of expected.keys())
        if (name !== "output.weight" && !present.has(name)) throw new InvalidInputError(`has no tensor ${name}`, field);
    return {hasOutput: present.has("output.weight")};
}
