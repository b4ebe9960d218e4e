import {basename} from "node:path";
import {InvalidInputError} from "../errors.js";
import {GgmlTensorType} from "./GgmlTensorType.js";
import {GgufReader} from "./GgufReader.js";
import {writeGgufStreaming} from "./GgufStreamWriter.js";
import type {LlamaHyperparameters} from "./llamaGgufMetadata.js";
import {checkSourceTensors, twinMetadata} from "./widenLlamaModelMetadata.js";
import {
    readSourceHyperparameters,
    twinHyperparameters,
    widenPlacement,
    type WidenedShape,
    type WidenFieldNames,
    type WidenPlacement
} from "./widenLlamaModelShape.js";
import {twinTensors} from "./widenLlamaModelTensors.js";
import {TiledNoise} from "./widenLlamaModelTile.js";

export type {WidenedShape, WidenPlacement} from "./widenLlamaModelShape.js";

export interface WidenLlamaModelOptions {
    /** The llama GGUF to embed (F32, F16 or Q8_0 tensors; any head count, grouped-query attention included). */
    readonly source: string;
    /** The twin's shape; its head size is the source's, so headCount = embeddingLength / (source head size). */
    readonly shape: WidenedShape;
    /** Where the twin is written (atomically). */
    readonly outputPath: string;
    /** Storage type of the matrices (the RMSNorm gains stay F32). Default F32. */
    readonly weightType?: GgmlTensorType;
    /**
     * σ >= 0: the zero output projections of the extra heads, units and layers get seeded uniform
     * noise, so the extra compute changes the function and the twin agrees less with the source.
     * Its standard deviation is σ × the RMS of the source's matrices of that kind (attn_output,
     * ffn_down) × sqrt(source inputs / extra inputs over all blocks): at σ = 1 the extra parts
     * together write about as much as the source's own, for any shape. Linear in σ; 0 (default):
     * exactly the unperturbed twin. Needs at least one extra head, unit or layer.
     */
    readonly perturb?: number;
    /** Seed of the perturbation noise (the unperturbed twin does not depend on it). Default 1. */
    readonly seed?: number;
    /** general.name; default `<source name>-twin-d<D>x<layers>`. */
    readonly name?: string;
    /** general.description; default says whose twin it is, at what shape, and that it is not a better model. */
    readonly description?: string;
    /** Field names in error messages (a CLI passes its flags). Default "source", "shape" and "perturb". */
    readonly fields?: Partial<WidenFieldNames>;
}

export interface WidenedLlamaModel {
    readonly path: string;
    /** The twin's hyperparameters (the epsilon scaled by d/D). */
    readonly shape: LlamaHyperparameters;
    readonly sourceShape: LlamaHyperparameters;
    readonly placement: WidenPlacement;
    readonly weightType: GgmlTensorType;
    readonly perturb: number;
    readonly seed: number;
    /** Weights in the file (every tensor's element count). */
    readonly parameterCount: number;
    readonly fileBytes: number;
    readonly description: string;
}

/** The extra heads' and layers' dense inputs never reach the output, so their values are fixed. */
const denseSeed = 0x7f4a_7c15;

/**
 * Writes a "widened twin" of a llama GGUF: a wider, deeper llama of `shape` that computes the same
 * function as the source, so it decodes the same text at the cost of its own size. A cost model with
 * a real draft's acceptance for timing speculative decoding; not a better model.
 *
 * Construction (d, L: the source's width and depth; D, L': the twin's):
 * - the residual keeps the source's coordinates [0, d) and is zero on [d, D): the embedding and
 *   output matrices get zero columns, and nothing ever writes to [d, D);
 * - RMSNorm over D coordinates of which D − d are zero: mean_D(x²) = (d/D)·mean_d(x²), so with the
 *   epsilon scaled to eps·d/D, sqrt(mean_D + eps·d/D) = sqrt(d/D)·sqrt(mean_d + eps), and every
 *   gain multiplied by sqrt(d/D) gives exactly the source's normalised vector;
 * - attention keeps the head size; the source's key/value heads are spread evenly over the twin's
 *   (with their query groups), extra heads have dense query/key/value weights and zero columns in
 *   attn_output; RoPE is unchanged;
 * - the source's feed-forward units come first, extra units have dense gate/up rows and zero
 *   columns in ffn_down;
 * - the source's blocks are spread evenly over the twin's, in order; extra blocks are dense with zero
 *   attn_output and ffn_down, so they add nothing to the residual;
 * - vocabulary, tokenizer, chat template, special tokens, context length: the source's metadata.
 * Every tensor is dense at the full shape, so it costs what a model of that shape costs. The file is
 * streamed tensor by tensor; dense values are tiled from one seeded block.
 */
export async function widenLlamaModel(options: WidenLlamaModelOptions): Promise<WidenedLlamaModel> {
    const fields: WidenFieldNames = {source: "source", shape: "shape", perturb: "perturb", ...options.fields};
    const weightType = options.weightType ?? GgmlTensorType.F32;
    const perturb = options.perturb ?? 0;
    const seed = options.seed ?? 1;
    if (!Number.isFinite(perturb) || perturb < 0)
        throw new InvalidInputError(`must be a finite number >= 0, got ${perturb}`, fields.perturb);
    if (!Number.isSafeInteger(seed) || seed < 0) throw new InvalidInputError(`must be a non-negative integer, got ${seed}`, "seed");
    const reader = GgufReader.open(options.source);
    try {
        const source = readSourceHyperparameters(reader, fields.source);
        const {hasOutput} = checkSourceTensors(reader, source, fields.source);
        const twin = twinHyperparameters(source, options.shape, weightType, fields.shape);
        const placement = widenPlacement(source, twin);
        if (perturb > 0 && !hasExtraParts(source, twin))
            throw new InvalidInputError("needs an extra head, unit or layer to perturb; the shape equals the source's", fields.perturb);
        const noiseScale =
            perturb === 0
                ? {attention: 0, feedForward: 0}
                : {
                      attention: perturb * rootMeanSquare(reader, source, "attn_output") * extraShare(source, twin, "embeddingLength"),
                      feedForward: perturb * rootMeanSquare(reader, source, "ffn_down") * extraShare(source, twin, "feedForwardLength")
                  };
        const tensors = twinTensors({
            reader,
            source,
            twin,
            placement,
            weightType,
            dense: new TiledNoise(denseSeed),
            noise: new TiledNoise(seed),
            noiseScale,
            hasOutput
        });
        const description = options.description ?? twinDescription(options.source, source, twin, perturb, seed);
        const sourceName = reader.metadata.get("general.name")?.value;
        const name =
            options.name ?? `${typeof sourceName === "string" ? sourceName : "llama"}-twin-d${twin.embeddingLength}x${twin.blockCount}`;
        const header = twinMetadata(reader, twin, weightType, {name, description});
        const fileBytes = await writeGgufStreaming(options.outputPath, header, tensors);
        const parameterCount = tensors.reduce((sum, tensor) => sum + tensor.dimensions.reduce((product, size) => product * size, 1), 0);
        return {
            path: options.outputPath,
            shape: twin,
            sourceShape: source,
            placement,
            weightType,
            perturb,
            seed,
            parameterCount,
            fileBytes,
            description
        };
    } finally {
        reader.close();
    }
}

function hasExtraParts(source: LlamaHyperparameters, twin: LlamaHyperparameters): boolean {
    return twin.headCount > source.headCount || twin.feedForwardLength > source.feedForwardLength || twin.blockCount > source.blockCount;
}

/**
 * sqrt(source inputs / extra inputs) of an output projection summed over all blocks (inputs: head
 * dimensions for attn_output, units for ffn_down), so that at σ = 1 the extra parts together write
 * about as much into the residual as the source's parts do, whatever the twin's shape.
 */
function extraShare(source: LlamaHyperparameters, twin: LlamaHyperparameters, width: "embeddingLength" | "feedForwardLength"): number {
    const sourceInputs = source[width] * source.blockCount;
    const extraInputs = (twin[width] - source[width]) * source.blockCount + twin[width] * (twin.blockCount - source.blockCount);
    return extraInputs === 0 ? 0 : Math.sqrt(sourceInputs / extraInputs);
}

/** RMS of every source block's `kind` matrix together. */
function rootMeanSquare(reader: GgufReader, source: LlamaHyperparameters, kind: string): number {
    let sum = 0;
    let count = 0;
    for (let block = 0; block < source.blockCount; block++) {
        const values = reader.readTensor(`blk.${block}.${kind}.weight`);
        for (const value of values) sum += value * value;
        count += values.length;
    }
    return Math.sqrt(sum / count);
}

/** What the twin is, in one sentence a model browser shows. */
export function twinDescription(
    sourcePath: string,
    source: LlamaHyperparameters,
    twin: LlamaHyperparameters,
    perturb: number,
    seed: number
): string {
    const shape = (h: LlamaHyperparameters): string =>
        `d ${h.embeddingLength}, ${h.blockCount} layers, ${h.headCount} heads of ${h.embeddingLength / h.headCount}, ff ${h.feedForwardLength}`;
    const what =
        `A widened twin of ${basename(sourcePath)} (${shape(source)}) at ${shape(twin)}: ` +
        "it computes the source's function (the same text; logits equal up to rounding) at the cost of its own shape. " +
        "A cost model for timing speculative decoding with the source's draft, not a better model.";
    if (perturb === 0) return what;
    return `${what} Perturbed (sigma ${perturb}, seed ${seed}): its extra heads, units and layers write seeded noise, so it agrees less with the source.`;
}
