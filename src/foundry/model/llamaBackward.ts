import {causalAttentionBackward} from "./causalAttention.js";
import {type LlamaConfig, headDimension} from "./LlamaConfig.js";
import type {LlamaActivations} from "./llamaForward.js";
import {type LlamaWeights, tensorOf} from "./LlamaWeights.js";
import {linearBackward} from "./linear.js";
import {rmsNormBackward} from "./rmsNorm.js";
import type {RopeTable} from "./RopeTable.js";
import {swigluBackward} from "./swiglu.js";

/**
 * Back-propagates `logitGradients` (∂loss/∂logits, tokens × vocabulary) through the forward pass
 * recorded in `activations`, adding ∂loss/∂w to `gradients` for every tensor (so a batch
 * accumulates by calling this once per sequence).
 */
export function llamaBackward(
    config: LlamaConfig,
    weights: LlamaWeights,
    rope: RopeTable,
    activations: LlamaActivations,
    logitGradients: Float64Array,
    gradients: LlamaWeights
): void {
    const length = activations.tokens.length;
    const d = config.embeddingLength;
    const ff = config.feedForwardLength;
    const shape = {length, headCount: config.headCount, headCountKv: config.headCountKv, headDimension: headDimension(config)};
    const kvWidth = shape.headDimension * config.headCountKv;
    const outputName = config.tiedOutput ? "token_embd.weight" : "output.weight";

    const finalNormedGradient = linearBackward(
        activations.finalNormed,
        tensorOf(weights, outputName),
        logitGradients,
        tensorOf(gradients, outputName),
        length,
        d,
        config.vocabularySize
    );
    const residual = rmsNormBackward(
        activations.finalInput,
        tensorOf(weights, "output_norm.weight"),
        activations.finalInverseRms,
        finalNormedGradient,
        tensorOf(gradients, "output_norm.weight"),
        length,
        d
    );

    for (let block = config.blockCount - 1; block >= 0; block--) {
        const saved = activations.blocks[block];
        const weight = (name: string): Float64Array => tensorOf(weights, `blk.${block}.${name}.weight`);
        const gradient = (name: string): Float64Array => tensorOf(gradients, `blk.${block}.${name}.weight`);

        // residual holds ∂loss/∂(block output); the feed-forward branch adds to it.
        const hiddenGradient = linearBackward(saved.hidden, weight("ffn_down"), residual, gradient("ffn_down"), length, ff, d);
        const {gateGradient, upGradient} = swigluBackward(saved.gate, saved.up, hiddenGradient);
        const normedGradient = linearBackward(
            saved.feedForwardNormed,
            weight("ffn_gate"),
            gateGradient,
            gradient("ffn_gate"),
            length,
            d,
            ff
        );
        const upInputGradient = linearBackward(saved.feedForwardNormed, weight("ffn_up"), upGradient, gradient("ffn_up"), length, d, ff);
        for (let i = 0; i < normedGradient.length; i++) normedGradient[i] += upInputGradient[i];
        const feedForwardInputGradient = rmsNormBackward(
            saved.afterAttention,
            weight("ffn_norm"),
            saved.feedForwardInverseRms,
            normedGradient,
            gradient("ffn_norm"),
            length,
            d
        );
        for (let i = 0; i < residual.length; i++) residual[i] += feedForwardInputGradient[i];

        // residual now holds ∂loss/∂(after attention); the attention branch adds to it.
        const attentionOutputGradient = linearBackward(
            saved.attentionOutput,
            weight("attn_output"),
            residual,
            gradient("attn_output"),
            length,
            d,
            d
        );
        const {queryGradient, keyGradient, valueGradient} = causalAttentionBackward(
            saved.queries,
            saved.keys,
            saved.values,
            saved.probabilities,
            attentionOutputGradient,
            shape
        );
        rope.rotate(queryGradient, length, config.headCount, true);
        rope.rotate(keyGradient, length, config.headCountKv, true);
        const attentionNormedGradient = linearBackward(
            saved.attentionNormed,
            weight("attn_q"),
            queryGradient,
            gradient("attn_q"),
            length,
            d,
            d
        );
        const fromKeys = linearBackward(saved.attentionNormed, weight("attn_k"), keyGradient, gradient("attn_k"), length, d, kvWidth);
        const fromValues = linearBackward(saved.attentionNormed, weight("attn_v"), valueGradient, gradient("attn_v"), length, d, kvWidth);
        for (let i = 0; i < attentionNormedGradient.length; i++) attentionNormedGradient[i] += fromKeys[i] + fromValues[i];
        const attentionInputGradient = rmsNormBackward(
            saved.input,
            weight("attn_norm"),
            saved.attentionInverseRms,
            attentionNormedGradient,
            gradient("attn_norm"),
            length,
            d
        );
        for (let i = 0; i < residual.length; i++) residual[i] += attentionInputGradient[i];
    }

    const embeddingGradient = tensorOf(gradients, "token_embd.weight");
    activations.tokens.forEach((token, position) => {
        for (let i = 0; i < d; i++) embeddingGradient[token * d + i] += residual[position * d + i];
    });
}
