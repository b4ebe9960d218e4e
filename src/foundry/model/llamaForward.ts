import {InvalidInputError, TokenOutOfRangeError} from "../../errors.js";
import {type AttentionShape, causalAttentionForward} from "./causalAttention.js";
import {type LlamaConfig, headDimension} from "./LlamaConfig.js";
import {type LlamaWeights, tensorOf} from "./LlamaWeights.js";
import {linearForward} from "./linear.js";
import {rmsNormForward} from "./rmsNorm.js";
import type {RopeTable} from "./RopeTable.js";
import {swigluForward} from "./swiglu.js";

/** What the backward pass needs from one block's forward pass. */
export interface BlockActivations {
    readonly input: Float64Array;
    readonly attentionNormed: Float64Array;
    readonly attentionInverseRms: Float64Array;
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
}

export interface LlamaActivations {
    readonly tokens: readonly number[];
    readonly blocks: BlockActivations[];
    readonly finalInput: Float64Array;
    readonly finalNormed: Float64Array;
    readonly finalInverseRms: Float64Array;
}

export interface LlamaForwardResult {
    /** tokens.length × vocabularySize, row t = the logits after reading tokens[0..t]. */
    readonly logits: Float64Array;
    readonly activations: LlamaActivations;
}

/**
 * The llama forward pass over one sequence starting at position 0, in float64, computing what
 * llama.cpp's LLM_ARCH_LLAMA graph computes: token embedding; per block x += Wo·attention(rope(Wq·n),
 * rope(Wk·n), Wv·n) with n = RMSNorm(x), then x += Wdown·(silu(Wgate·m) ⊙ Wup·m) with m = RMSNorm(x);
 * finally logits = Wout·RMSNorm(x), Wout = token_embd when the output is tied.
 */
export function llamaForward(config: LlamaConfig, weights: LlamaWeights, rope: RopeTable, tokens: readonly number[]): LlamaForwardResult {
    const length = tokens.length;
    const d = config.embeddingLength;
    const ff = config.feedForwardLength;
    const vocabulary = config.vocabularySize;
    if (length === 0) throw new InvalidInputError("a sequence needs at least one token", "tokens");
    if (length > config.contextLength)
        throw new InvalidInputError(`${length} tokens exceed the context length ${config.contextLength}`, "tokens");
    const shape: AttentionShape = {
        length,
        headCount: config.headCount,
        headCountKv: config.headCountKv,
        headDimension: headDimension(config)
    };
    const kvWidth = shape.headDimension * config.headCountKv;

    const embedding = tensorOf(weights, "token_embd.weight");
    let x = new Float64Array(length * d);
    tokens.forEach((token, position) => {
        if (!Number.isInteger(token) || token < 0 || token >= vocabulary)
            throw new TokenOutOfRangeError(`token ${token} is outside [0, ${vocabulary})`, `tokens[${position}]`);
        x.set(embedding.subarray(token * d, (token + 1) * d), position * d);
    });

    const blocks: BlockActivations[] = [];
    for (let block = 0; block < config.blockCount; block++) {
        const tensor = (name: string): Float64Array => tensorOf(weights, `blk.${block}.${name}.weight`);
        const input = x;
        const attentionNorm = rmsNormForward(input, tensor("attn_norm"), length, d, config.rmsNormEpsilon);
        const queries = linearForward(attentionNorm.output, tensor("attn_q"), length, d, d);
        const keys = linearForward(attentionNorm.output, tensor("attn_k"), length, d, kvWidth);
        const values = linearForward(attentionNorm.output, tensor("attn_v"), length, d, kvWidth);
        rope.rotate(queries, length, config.headCount);
        rope.rotate(keys, length, config.headCountKv);
        const attention = causalAttentionForward(queries, keys, values, shape);
        const projected = linearForward(attention.output, tensor("attn_output"), length, d, d);
        const afterAttention = new Float64Array(length * d);
        for (let i = 0; i < afterAttention.length; i++) afterAttention[i] = input[i] + projected[i];

        const feedForwardNorm = rmsNormForward(afterAttention, tensor("ffn_norm"), length, d, config.rmsNormEpsilon);
        const gate = linearForward(feedForwardNorm.output, tensor("ffn_gate"), length, d, ff);
        const up = linearForward(feedForwardNorm.output, tensor("ffn_up"), length, d, ff);
        const hidden = swigluForward(gate, up);
        const down = linearForward(hidden, tensor("ffn_down"), length, ff, d);
        x = new Float64Array(length * d);
        for (let i = 0; i < x.length; i++) x[i] = afterAttention[i] + down[i];

        blocks.push({
            input,
            attentionNormed: attentionNorm.output,
            attentionInverseRms: attentionNorm.inverseRms,
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
            hidden
        });
    }

    const finalNorm = rmsNormForward(x, tensorOf(weights, "output_norm.weight"), length, d, config.rmsNormEpsilon);
    const output = config.tiedOutput ? embedding : tensorOf(weights, "output.weight");
    const logits = linearForward(finalNorm.output, output, length, d, vocabulary);
    return {
        logits,
        activations: {tokens: [...tokens], blocks, finalInput: x, finalNormed: finalNorm.output, finalInverseRms: finalNorm.inverseRms}
    };
}
