import {InvalidInputError, TokenOutOfRangeError} from "../../errors.js";
import {tensorOf} from "../model/LlamaWeights.js";
import {blockedLinearForward} from "./blockedLinear.js";
import {rmsNormForward} from "../model/rmsNorm.js";
import type {RopeTable} from "../model/RopeTable.js";
import {swigluForward} from "../model/swiglu.js";
import {chainAttentionForward} from "./chainAttention.js";
import {type Eagle3Config, eagle3FeatureWidth, eagle3HeadDimension} from "./Eagle3Config.js";
import type {Eagle3Example} from "./Eagle3Example.js";
import type {Eagle3Weights} from "./Eagle3Weights.js";

/** What the backward pass needs from one drafting step over all roots. */
export interface Eagle3StepActivations {
    /** Root of row 0: 0 at step 0, the example's chain start after. */
    readonly firstRoot: number;
    /** Input token of each row (root P reads tokens[P + k + 1] at step k). */
    readonly inputTokens: readonly number[];
    /** The g of each row: fc(features) at step 0, the previous step's pre-norm output after. */
    readonly g: Float64Array;
    readonly embedded: Float64Array;
    readonly embeddedInverseRms: Float64Array;
    readonly gInverseRms: Float64Array;
    /** Rows of [RMSNorm(embedding) · attn_norm, RMSNorm(g) · attn_norm_2], 2·d wide. */
    readonly concat: Float64Array;
    readonly queries: Float64Array;
    readonly keys: Float64Array;
    readonly values: Float64Array;
    readonly probabilities: Float64Array;
    readonly attentionOutput: Float64Array;
    readonly afterAttention: Float64Array;
    readonly feedForwardNormed: Float64Array;
    readonly feedForwardInverseRms: Float64Array;
    readonly gate: Float64Array;
    readonly up: Float64Array;
    readonly hidden: Float64Array;
    /** The decoder's output before output_norm: the next step's g (llama.cpp's t_h_nextn). */
    readonly prenorm: Float64Array;
    readonly finalNormed: Float64Array;
    readonly finalInverseRms: Float64Array;
}

export interface Eagle3ForwardResult {
    /** Per step k, rows × vocabulary; row r (root P = firstRoot + r) predicts tokens[P + k + 2]. */
    readonly logits: Float64Array[];
    readonly steps: Eagle3StepActivations[];
    /** Rows₀ feature rows fc read. */
    readonly features: Float64Array;
}

/** Roots of a sequence of `length` tokens: positions P with a pair (tokens[P+1], g[P]) and a label tokens[P+2]. */
export function eagle3Roots(length: number): number {
    return Math.max(0, length - 2);
}

/**
 * The EAGLE-3 head over one sequence with `unrolledSteps` drafting steps, computing what llama.cpp's
 * eagle3 encoder and decoder graphs compute. Step 0 reads, at every position P, the pair
 * (tokens[P+1], g[P] = fc · features[P]); step k ≥ 1 reads (tokens[P+k+1], prenorm of step k−1 at root P)
 * at position P + k, attending to step-0 rows 0..P and its own chain (chainAttention), for the roots
 * from the example's chainStart on. The decoder:
 * c = [RMSNorm(embd)·attn_norm, RMSNorm(g)·attn_norm_2]; h = Wo·attention(rope(Wq·c), rope(Wk·c), Wv·c) + g;
 * prenorm = h + Wdown·(silu(Wgate·m) ⊙ Wup·m) with m = RMSNorm(h)·ffn_norm; logits = Wout·RMSNorm(prenorm)·output_norm.
 */
export function eagle3Forward(
    config: Eagle3Config,
    weights: Eagle3Weights,
    rope: RopeTable,
    example: Eagle3Example,
    unrolledSteps: number
): Eagle3ForwardResult {
    const d = config.embeddingLength;
    const featureWidth = eagle3FeatureWidth(config);
    const roots = eagle3Roots(example.tokens.length);
    if (roots < 1) throw new InvalidInputError("a sequence needs at least three tokens", "tokens");
    if (example.tokens.length > config.contextLength)
        throw new InvalidInputError(`${example.tokens.length} tokens exceed the context length ${config.contextLength}`, "tokens");
    if (example.features.length < roots * featureWidth)
        throw new InvalidInputError(`expected at least ${roots} rows of ${featureWidth} features`, "features");
    if (!Number.isSafeInteger(unrolledSteps) || unrolledSteps < 1)
        throw new InvalidInputError(`must be a positive integer, got ${unrolledSteps}`, "unrolledSteps");
    example.tokens.forEach((token, position) => {
        if (!Number.isInteger(token) || token < 0 || token >= config.vocabularySize)
            throw new TokenOutOfRangeError(`token ${token} is outside [0, ${config.vocabularySize})`, `tokens[${position}]`);
    });
    const features = example.features.subarray(0, roots * featureWidth);
    const chainStart = Math.min(Math.max(0, example.chainStart ?? 0), roots - 1);
    let g = blockedLinearForward(features, tensorOf(weights, "fc.weight"), roots, featureWidth, d);
    const steps: Eagle3StepActivations[] = [];
    const logits: Float64Array[] = [];
    for (let step = 0; step < unrolledSteps; step++) {
        const firstRoot = step === 0 ? 0 : chainStart;
        const rows = roots - step - firstRoot;
        if (rows < 1) break;
        // g rows: step 0's start at root 0, a chain's at its first root.
        const gOffset = step === 1 ? chainStart : 0;
        const inputTokens = Array.from({length: rows}, (_unused, row) => example.tokens[firstRoot + row + step + 1]);
        const activations = decoderStep(
            config,
            weights,
            rope,
            inputTokens,
            g.slice(gOffset * d, (gOffset + rows) * d),
            step,
            firstRoot,
            steps
        );
        steps.push(activations);
        logits.push(blockedLinearForward(activations.finalNormed, tensorOf(weights, "output.weight"), rows, d, config.vocabularySize));
        g = activations.prenorm;
    }
    return {logits, steps, features};
}

function decoderStep(
    config: Eagle3Config,
    weights: Eagle3Weights,
    rope: RopeTable,
    inputTokens: readonly number[],
    g: Float64Array,
    step: number,
    firstRoot: number,
    earlier: readonly Eagle3StepActivations[]
): Eagle3StepActivations {
    const d = config.embeddingLength;
    const ff = config.feedForwardLength;
    const rows = inputTokens.length;
    const epsilon = config.rmsNormEpsilon;
    const headDimension = eagle3HeadDimension(config);
    const kvWidth = headDimension * config.headCountKv;
    const tensor = (name: string): Float64Array => tensorOf(weights, name);
    const table = tensor("token_embd.weight");
    const embedded = new Float64Array(rows * d);
    inputTokens.forEach((token, row) => embedded.set(table.subarray(token * d, (token + 1) * d), row * d));
    const embeddedNorm = rmsNormForward(embedded, tensor("blk.0.attn_norm.weight"), rows, d, epsilon);
    const gNorm = rmsNormForward(g, tensor("blk.0.attn_norm_2.weight"), rows, d, epsilon);
    const concat = new Float64Array(rows * 2 * d);
    for (let row = 0; row < rows; row++) {
        concat.set(embeddedNorm.output.subarray(row * d, (row + 1) * d), row * 2 * d);
        concat.set(gNorm.output.subarray(row * d, (row + 1) * d), row * 2 * d + d);
    }
    const queries = blockedLinearForward(concat, tensor("blk.0.attn_q.weight"), rows, 2 * d, d);
    const keys = blockedLinearForward(concat, tensor("blk.0.attn_k.weight"), rows, 2 * d, kvWidth);
    const values = blockedLinearForward(concat, tensor("blk.0.attn_v.weight"), rows, 2 * d, kvWidth);
    rope.rotate(queries, rows, config.headCount, false, firstRoot + step);
    rope.rotate(keys, rows, config.headCountKv, false, firstRoot + step);
    const attention = chainAttentionForward(
        queries,
        [...earlier.map((s) => s.keys), keys],
        [...earlier.map((s) => s.values), values],
        {
            headCount: config.headCount,
            headCountKv: config.headCountKv,
            headDimension
        },
        firstRoot
    );
    const projected = blockedLinearForward(attention.output, tensor("blk.0.attn_output.weight"), rows, d, d);
    const afterAttention = new Float64Array(rows * d);
    for (let i = 0; i < afterAttention.length; i++) afterAttention[i] = projected[i] + g[i];
    const feedForwardNorm = rmsNormForward(afterAttention, tensor("blk.0.ffn_norm.weight"), rows, d, epsilon);
    const gate = blockedLinearForward(feedForwardNorm.output, tensor("blk.0.ffn_gate.weight"), rows, d, ff);
    const up = blockedLinearForward(feedForwardNorm.output, tensor("blk.0.ffn_up.weight"), rows, d, ff);
    const hidden = swigluForward(gate, up);
    const down = blockedLinearForward(hidden, tensor("blk.0.ffn_down.weight"), rows, ff, d);
    const prenorm = new Float64Array(rows * d);
    for (let i = 0; i < prenorm.length; i++) prenorm[i] = afterAttention[i] + down[i];
    const finalNorm = rmsNormForward(prenorm, tensor("output_norm.weight"), rows, d, epsilon);
    return {
        firstRoot,
        inputTokens,
        g,
        embedded,
        embeddedInverseRms: embeddedNorm.inverseRms,
        gInverseRms: gNorm.inverseRms,
        concat,
        queries,
        keys,
        values,
        probabilities: attention.probabilities,
        attentionOutput: attention.output,
        afterAttention,
        feedForwardNormed: feedForwardNorm.output,
        feedForwardInverseRms: feedForwardNorm.inverseRms,
        gate,
        up,
        hidden,
        prenorm,
        finalNormed: finalNorm.output,
        finalInverseRms: finalNorm.inverseRms
    };
}
