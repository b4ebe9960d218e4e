import {join} from "node:path";
import {InvalidInputError} from "../errors.js";
import {ByteTokenizer} from "./ByteTokenizer.js";
import {GgmlTensorType} from "./GgmlTensorType.js";
import {GgufValueType} from "./GgufValueType.js";
import {GgufWriter} from "./GgufWriter.js";
import type {GgufVocabulary} from "./GgufVocabulary.js";
import {llamaGgufMetadata, type LlamaHyperparameters, spmVocabulary} from "./llamaGgufMetadata.js";

/** The free dimensions of a fixture model; the vocabulary always comes from the shared tokenizer. */
export interface LlamaShape {
    readonly embeddingLength: number;
    readonly blockCount: number;
    readonly headCount: number;
    readonly headCountKv: number;
    readonly feedForwardLength: number;
    readonly contextLength: number;
}

export interface RandomLlamaPairOptions {
    /** Folder to write `target.gguf` and `draft.gguf` into (must exist). */
    readonly directory: string;
    readonly seed: number;
    readonly target?: Partial<LlamaShape>;
    readonly draft?: Partial<LlamaShape>;
    /** Storage type of the weight matrices (norm vectors stay F32). Default F32. */
    readonly weightType?: GgmlTensorType;
    /** Noise added to the draft's copy of the target weights, relative to each copied slice's RMS. Default 0.2. */
    readonly draftNoise?: number;
    /** Standard deviation of the target's logits before normalisation; sets output entropy. Default 3. */
    readonly logitScale?: number;
    /**
     * Scale of the target's embedding and output components outside the draft's slice, relative to
     * those inside it. Lower puts more of the target's signal where the draft can see it. Default 0.3.
     */
    readonly tailScale?: number;
    /** Scale of each block's residual writes (attn_output, ffn_down) relative to 1/sqrt(fan_in). Default 0.3. */
    readonly residualScale?: number;
    /** Extra whole pieces for the shared byte tokenizer. */
    readonly pieces?: readonly string[];
    /**
     * The vocabulary both files carry instead of the byte tokenizer (a real family's, hfBpeVocabulary);
     * its chat template is stored unless `chatTemplate` is given.
     */
    readonly vocabulary?: GgufVocabulary;
    /** A Jinja chat template stored as `tokenizer.chat_template` in both files (for serving tests). */
    readonly chatTemplate?: string;
    /**
     * Unused `[PAD<id>]` tokens appended to the target's vocabulary only, with zero embedding and
     * output rows (logit 0), as a large checkpoint pads its vocabulary beyond its draft's: Qwen2.5 7B
     * has 152,064 rows, 0.5B 151,936. Default 0.
     */
    readonly targetPaddingTokens?: number;
}

export interface RandomLlamaPair {
    readonly targetPath: string;
    readonly draftPath: string;
    /** The byte tokenizer both files carry; undefined when `options.vocabulary` replaced it. */
    readonly tokenizer: ByteTokenizer | undefined;
    readonly target: LlamaHyperparameters;
    readonly draft: LlamaHyperparameters;
}

export const defaultTargetShape: LlamaShape = {
    embeddingLength: 64,
    blockCount: 2,
    headCount: 4,
    headCountKv: 4,
    feedForwardLength: 128,
    contextLength: 256
};
export const defaultDraftShape: LlamaShape = {
    embeddingLength: 32,
    blockCount: 1,
    headCount: 2,
    headCountKv: 2,
    feedForwardLength: 64,
    contextLength: 256
};

type Weights = Map<string, {dimensions: number[]; values: Float32Array}>;

/**
 * Writes a deterministic random-weight llama target and a smaller draft that share one ByteTokenizer
 * vocabulary. Same options → byte-identical files (all arithmetic is float32-rounded and the
 * generator is integer-only; weights are uniform, so no Math.log/cos whose last bit could differ).
 *
 * Correlation, so acceptance is neither zero nor trivially one: the draft is a noisy copy of a slice
 * of the target. It keeps the first `draft.embeddingLength` residual dimensions, the first heads
 * (same head size), the first feed-forward units and the first `draft.blockCount` blocks; each copied
 * matrix gets uniform noise of `draftNoise` × its RMS. The target's embedding and output components
 * outside that slice are scaled by `tailScale`, so most of its signal lives where the draft sees it;
 * the draft's output matrix is multiplied by a gain that gives its logits the target's scale. The
 * embedding → output path carries a bigram signal both models share; the blocks add context
 * dependence (scaled by `residualScale`) that the draft only partly reproduces.
 *
 * Scales: embeddings unit variance; attention/FFN input matrices 1/sqrt(fan_in); residual writes
 * residualScale/sqrt(fan_in); output logitScale/sqrt(d). Measured with the defaults (seeds 1, 2, 3, 7;
 * ~100 positions of mixed English/Japanese text): target entropy 2.8–3.1 nats (uniform: ln 260 = 5.56),
 * mean top probability about 0.3, draft entropy 2.6–2.9, expected acceptance Σ min(p, q) = 1 − TV
 * 0.60–0.66, target and draft argmax agreeing on 34–57% of positions.
 */
export async function writeRandomLlamaPair(options: RandomLlamaPairOptions): Promise<RandomLlamaPair> {
    if (options.vocabulary !== undefined && options.pieces !== undefined)
        throw new InvalidInputError("pieces extend the byte tokenizer, which a given vocabulary replaces", "pieces");
    const byteTokenizer = options.vocabulary === undefined ? new ByteTokenizer({pieces: options.pieces}) : undefined;
    const tokenizer = options.vocabulary ?? spmVocabulary(byteTokenizer!);
    const chatTemplate = options.chatTemplate ?? options.vocabulary?.chatTemplate;
    const targetShape = {...defaultTargetShape, ...options.target};
    const draftShape = {...defaultDraftShape, ...options.draft};
    checkSlice(targetShape, draftShape);
    const target = hyperparameters(targetShape, tokenizer);
    const draft = hyperparameters(draftShape, tokenizer);
    const weightType = options.weightType ?? GgmlTensorType.F32;
    const noise = options.draftNoise ?? 0.2;
    if (!(noise >= 0)) throw new InvalidInputError(`must be >= 0, got ${noise}`, "draftNoise");

    const scales: WeightScales = {
        logitScale: options.logitScale ?? 3,
        tailScale: options.tailScale ?? 0.3,
        residualScale: options.residualScale ?? 0.3,
        sliceWidth: draft.embeddingLength
    };
    for (const key of ["logitScale", "tailScale", "residualScale"] as const)
        if (!(scales[key] >= 0) || !Number.isFinite(scales[key]))
            throw new InvalidInputError(`must be a finite number >= 0, got ${scales[key]}`, key);

    const targetWeights = randomTargetWeights(target, scales, new SplitMix32(options.seed));
    const draftWeights = sliceDraftWeights(targetWeights, target, draft, scales, noise, new SplitMix32(options.seed ^ 0x5bd1e995));

    const padding = options.targetPaddingTokens ?? 0;
    if (!Number.isSafeInteger(padding) || padding < 0)
        throw new InvalidInputError(`must be a non-negative integer, got ${padding}`, "targetPaddingTokens");
    const paddedTarget = {...target, vocabularySize: target.vocabularySize + padding};
    const targetPath = join(options.directory, "target.gguf");
    const draftPath = join(options.directory, "draft.gguf");
    await writeModel(
        targetPath,
        paddedTarget,
        tokenizer,
        padVocabularyRows(targetWeights, target.embeddingLength, padding),
        weightType,
        "specgate-random-target",
        chatTemplate,
        padding
    );
    await writeModel(draftPath, draft, tokenizer, draftWeights, weightType, "specgate-random-draft", chatTemplate);
    return {targetPath, draftPath, tokenizer: byteTokenizer, target: paddedTarget, draft};
}

/** The weights with `count` zero rows appended to the embedding and output matrices (ggml [d, V]: rows are contiguous). */
function padVocabularyRows(weights: Weights, d: number, count: number): Weights {
    if (count === 0) return weights;
    const padded: Weights = new Map(weights);
    for (const name of ["token_embd.weight", "output.weight"]) {
        const tensor = weights.get(name)!;
        const values = new Float32Array(tensor.values.length + count * d);
        values.set(tensor.values);
        padded.set(name, {dimensions: [d, tensor.dimensions[1] + count], values});
    }
    return padded;
}

/** Writes one llama GGUF with the given weights (matrices as `weightType`, vectors as F32). */
async function writeModel(
    path: string,
    h: LlamaHyperparameters,
    tokenizer: GgufVocabulary,
    weights: Weights,
    weightType: GgmlTensorType,
    name: string,
    chatTemplate?: string,
    paddingTokens = 0
): Promise<void> {
    const writer = new GgufWriter();
    for (const entry of llamaGgufMetadata(h, tokenizer, {name, weightType, paddingTokens})) writer.set(entry.key, entry.type, entry.value);
    if (chatTemplate != null) writer.set("tokenizer.chat_template", GgufValueType.String, chatTemplate);
    for (const [tensorName, tensor] of weights) {
        const type = tensor.dimensions.length === 1 ? GgmlTensorType.F32 : weightType;
        writer.addTensor(tensorName, tensor.dimensions, type, tensor.values);
    }
    await writer.writeFile(path);
}

function hyperparameters(shape: LlamaShape, tokenizer: GgufVocabulary): LlamaHyperparameters {
    return {
        ...shape,
        layerNormRmsEpsilon: 1e-5,
        ropeFreqBase: 10000,
        vocabularySize: tokenizer.size
    };
}

function checkSlice(target: LlamaShape, draft: LlamaShape): void {
    // Each shape on its own first, so a bad target is not blamed on the draft.
    for (const [role, shape] of [
        ["target", target],
        ["draft", draft]
    ] as const)
        if (!Number.isInteger(shape.embeddingLength / shape.headCount))
            throw new InvalidInputError(
                `the ${role}'s embedding length ${shape.embeddingLength} is not a multiple of its ${shape.headCount} heads`,
                `${role}.headCount`
            );
    const targetHead = target.embeddingLength / target.headCount;
    const draftHead = draft.embeddingLength / draft.headCount;
    if (targetHead !== draftHead)
        throw new InvalidInputError(`the draft must keep the target's head size ${targetHead}, got ${draftHead}`, "draft.headCount");
    const keys: (keyof LlamaShape)[] = ["embeddingLength", "blockCount", "headCount", "headCountKv", "feedForwardLength"];
    for (const key of keys)
        if (draft[key] > target[key])
            throw new InvalidInputError(`the draft is a slice of the target: ${key} ${draft[key]} > ${target[key]}`, `draft.${key}`);
}

/** Names and ggml dimensions ([columns, rows], i.e. [fan_in, fan_out]) of every llama tensor. */
function tensorLayout(h: LlamaHyperparameters): {name: string; dimensions: number[]; scale: number}[] {
    const d = h.embeddingLength;
    const headDimension = d / h.headCount;
    const kvWidth = headDimension * h.headCountKv;
    const layout = [{name: "token_embd.weight", dimensions: [d, h.vocabularySize], scale: 1}];
    for (let block = 0; block < h.blockCount; block++) {
        const prefix = `blk.${block}.`;
        layout.push(
            {name: `${prefix}attn_norm.weight`, dimensions: [d], scale: 0},
            {name: `${prefix}attn_q.weight`, dimensions: [d, d], scale: 1 / Math.sqrt(d)},
            {name: `${prefix}attn_k.weight`, dimensions: [d, kvWidth], scale: 1 / Math.sqrt(d)},
            {name: `${prefix}attn_v.weight`, dimensions: [d, kvWidth], scale: 1 / Math.sqrt(d)},
            {name: `${prefix}attn_output.weight`, dimensions: [d, d], scale: 1 / Math.sqrt(d)},
            {name: `${prefix}ffn_norm.weight`, dimensions: [d], scale: 0},
            {name: `${prefix}ffn_gate.weight`, dimensions: [d, h.feedForwardLength], scale: 1 / Math.sqrt(d)},
            {name: `${prefix}ffn_up.weight`, dimensions: [d, h.feedForwardLength], scale: 1 / Math.sqrt(d)},
            {name: `${prefix}ffn_down.weight`, dimensions: [h.feedForwardLength, d], scale: 1 / Math.sqrt(h.feedForwardLength)}
        );
    }
    layout.push(
        {name: "output_norm.weight", dimensions: [d], scale: 0},
        {name: "output.weight", dimensions: [d, h.vocabularySize], scale: 1 / Math.sqrt(d)}
    );
    return layout;
}

interface WeightScales {
    readonly logitScale: number;
    readonly tailScale: number;
    readonly residualScale: number;
    /** Residual dimensions the draft keeps; target components beyond it are scaled by tailScale. */
    readonly sliceWidth: number;
}

function isResidualWrite(name: string): boolean {
    return name.endsWith("attn_output.weight") || name.endsWith("ffn_down.weight");
}

function randomTargetWeights(h: LlamaHyperparameters, scales: WeightScales, random: SplitMix32): Weights {
    const weights: Weights = new Map();
    for (const {name, dimensions, scale} of tensorLayout(h)) {
        const count = dimensions.reduce((product, size) => product * size, 1);
        const values = new Float32Array(count);
        if (dimensions.length === 1)
            values.fill(1); // RMSNorm gains
        else {
            const vocabularyMatrix = name === "token_embd.weight" || name === "output.weight";
            const tensorScale =
                scale * (name === "output.weight" ? scales.logitScale : 1) * (isResidualWrite(name) ? scales.residualScale : 1);
            const columns = dimensions[0];
            for (let i = 0; i < count; i++) {
                const tail = vocabularyMatrix && i % columns >= scales.sliceWidth ? scales.tailScale : 1;
                values[i] = random.uniformWithStandardDeviation(tensorScale * tail);
            }
        }
        weights.set(name, {dimensions, values});
    }
    return weights;
}

function sliceDraftWeights(
    targetWeights: Weights,
    target: LlamaHyperparameters,
    draft: LlamaHyperparameters,
    scales: WeightScales,
    noise: number,
    random: SplitMix32
): Weights {
    const weights: Weights = new Map();
    // The target's RMSNorm divides by the RMS over all its dimensions, in which the tail counts tailScale²;
    // the draft's divides by the RMS over the slice alone. This gain gives the draft the target's logit scale.
    const kept = draft.embeddingLength;
    const dropped = target.embeddingLength - kept;
    const outputGain = Math.sqrt(target.embeddingLength / (kept + scales.tailScale ** 2 * dropped));
    for (const {name, dimensions} of tensorLayout(draft)) {
        const source = targetWeights.get(name);
        if (source === undefined) throw new InvalidInputError(`target has no tensor ${name}`, "draft");
        const columns = dimensions[0];
        const rows = dimensions[1] ?? 1;
        const sourceColumns = source.dimensions[0];
        const values = new Float32Array(columns * rows);
        if (dimensions.length === 1) values.fill(1);
        else {
            let sumOfSquares = 0;
            for (let row = 0; row < rows; row++)
                for (let column = 0; column < columns; column++) sumOfSquares += source.values[row * sourceColumns + column] ** 2;
            // Noise relative to the RMS of the copied slice, so every tensor is perturbed alike.
            const noiseScale = noise * Math.sqrt(sumOfSquares / (rows * columns));
            const gain = name === "output.weight" ? outputGain : 1;
            for (let row = 0; row < rows; row++)
                for (let column = 0; column < columns; column++) {
                    const copied = source.values[row * sourceColumns + column];
                    values[row * columns + column] = Math.fround(gain * (copied + random.uniformWithStandardDeviation(noiseScale)));
                }
        }
        weights.set(name, {dimensions, values});
    }
    return weights;
}

/**
 * SplitMix32 (Vigna's 32-bit golden-ratio Weyl sequence with the MurmurHash3 finaliser): tiny,
 * integer-only and local, so fixture bytes never change because another module's generator did.
 */
class SplitMix32 {
    private state: number;

    public constructor(seed: number) {
        if (!Number.isSafeInteger(seed)) throw new InvalidInputError(`must be an integer, got ${seed}`, "seed");
        this.state = (seed ^ Math.floor(seed / 0x1_0000_0000)) | 0;
    }

    public nextUint32(): number {
        this.state = (this.state + 0x9e3779b9) | 0;
        let z = this.state;
        z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
        z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
        return (z ^ (z >>> 16)) >>> 0;
    }

    /** Uniform on [-a, a) with a = sqrt(3)·std, so the variance is std². */
    public uniformWithStandardDeviation(standardDeviation: number): number {
        const unit = this.nextUint32() / 0x1_0000_0000;
        return Math.fround((2 * unit - 1) * Math.sqrt(3) * standardDeviation);
    }
}
