import {tensorOf} from "../model/LlamaWeights.js";
import {blockedLinearBackward} from "./blockedLinear.js";
import {rmsNormBackward} from "../model/rmsNorm.js";
import type {RopeTable} from "../model/RopeTable.js";
import {swigluBackward} from "../model/swiglu.js";
import {chainAttentionBackward} from "./chainAttention.js";
import {type Eagle3Config, eagle3FeatureWidth, eagle3HeadDimension} from "./Eagle3Config.js";
import type {Eagle3ForwardResult} from "./eagle3Forward.js";
import type {Eagle3Weights} from "./Eagle3Weights.js";

/**
 * Back-propagates per-step logit gradients (∂loss/∂logits, one array per unrolled step) through the
 * forward pass, adding ∂loss/∂w to `gradients`. Steps run last to first: step k's g is step k−1's
 * pre-norm output, and step k's queries read earlier steps' keys and values, so a step's key and value
 * gradients are complete once every later step is done.
 */
export function eagle3Backward(
    config: Eagle3Config,
    weights: Eagle3Weights,
    rope: RopeTable,
    forward: Eagle3ForwardResult,
    logitGradients: readonly Float64Array[],
    gradients: Eagle3Weights
): void {
    const d = config.embeddingLength;
    const ff = config.feedForwardLength;
    const headDimension = eagle3HeadDimension(config);
    const kvWidth = headDimension * config.headCountKv;
    const shape = {headCount: config.headCount, headCountKv: config.headCountKv, headDimension};
    const weight = (name: string): Float64Array => tensorOf(weights, name);
    const gradient = (name: string): Float64Array => tensorOf(gradients, name);
    const steps = forward.steps;
    const keyGradients = steps.map((step) => new Float64Array(step.keys.length));
    const valueGradients = steps.map((step) => new Float64Array(step.values.length));
    // ∂loss/∂(step k's pre-norm output) from step k+1's g; none for the last step.
    let prenormFromNext: Float64Array | undefined;
    for (let k = steps.length - 1; k >= 0; k--) {
        const saved = steps[k];
        const rows = saved.inputTokens.length;
        const finalNormedGradient = blockedLinearBackward(
            saved.finalNormed,
            weight("output.weight"),
            logitGradients[k],
            gradient("output.weight"),
            rows,
            d,
            config.vocabularySize
        );
        const residual = rmsNormBackward(
            saved.prenorm,
            weight("output_norm.weight"),
            saved.finalInverseRms,
            finalNormedGradient,
            gradient("output_norm.weight"),
            rows,
            d
        );
        if (prenormFromNext !== undefined) {
            const offset = (steps[k + 1].firstRoot - saved.firstRoot) * d;
            for (let i = 0; i < prenormFromNext.length; i++) residual[offset + i] += prenormFromNext[i];
        }

        const hiddenGradient = blockedLinearBackward(
            saved.hidden,
            weight("blk.0.ffn_down.weight"),
            residual,
            gradient("blk.0.ffn_down.weight"),
            rows,
            ff,
            d
        );
        const {gateGradient, upGradient} = swigluBackward(saved.gate, saved.up, hiddenGradient);
        const normedGradient = blockedLinearBackward(
            saved.feedForwardNormed,
            weight("blk.0.ffn_gate.weight"),
            gateGradient,
            gradient("blk.0.ffn_gate.weight"),
            rows,
            d,
            ff
        );
        const fromUp = blockedLinearBackward(
            saved.feedForwardNormed,
            weight("blk.0.ffn_up.weight"),
            upGradient,
            gradient("blk.0.ffn_up.weight"),
            rows,
            d,
            ff
        );
        for (let i = 0; i < normedGradient.length; i++) normedGradient[i] += fromUp[i];
        const feedForwardInputGradient = rmsNormBackward(
            saved.afterAttention,
            weight("blk.0.ffn_norm.weight"),
            saved.feedForwardInverseRms,
            normedGradient,
            gradient("blk.0.ffn_norm.weight"),
            rows,
            d
        );
        // residual becomes ∂loss/∂h; h = attention projection + g.
        for (let i = 0; i < residual.length; i++) residual[i] += feedForwardInputGradient[i];
        const gGradient = Float64Array.from(residual);

        const attentionOutputGradient = blockedLinearBackward(
            saved.attentionOutput,
            weight("blk.0.attn_output.weight"),
            residual,
            gradient("blk.0.attn_output.weight"),
            rows,
            d,
            d
        );
        const queryGradient = chainAttentionBackward(
            saved.queries,
            steps.slice(0, k + 1).map((step) => step.keys),
            steps.slice(0, k + 1).map((step) => step.values),
            saved.probabilities,
            attentionOutputGradient,
            keyGradients,
            valueGradients,
            shape,
            saved.firstRoot
        );
        const keyGradient = keyGradients[k];
        rope.rotate(queryGradient, rows, config.headCount, true, saved.firstRoot + k);
        rope.rotate(keyGradient, rows, config.headCountKv, true, saved.firstRoot + k);
        const concatGradient = blockedLinearBackward(
            saved.concat,
            weight("blk.0.attn_q.weight"),
            queryGradient,
            gradient("blk.0.attn_q.weight"),
            rows,
            2 * d,
            d
        );
        const fromKeys = blockedLinearBackward(
            saved.concat,
            weight("blk.0.attn_k.weight"),
            keyGradient,
            gradient("blk.0.attn_k.weight"),
            rows,
            2 * d,
            kvWidth
        );
        const fromValues = blockedLinearBackward(
            saved.concat,
            weight("blk.0.attn_v.weight"),
            valueGradients[k],
            gradient("blk.0.attn_v.weight"),
            rows,
            2 * d,
            kvWidth
        );
        const embeddedNormedGradient = new Float64Array(rows * d);
        const gNormedGradient = new Float64Array(rows * d);
        for (let row = 0; row < rows; row++)
            for (let i = 0; i < d; i++) {
                const left = row * 2 * d + i;
                embeddedNormedGradient[row * d + i] = concatGradient[left] + fromKeys[left] + fromValues[left];
                gNormedGradient[row * d + i] = concatGradient[left + d] + fromKeys[left + d] + fromValues[left + d];
            }
        const embeddedGradient = rmsNormBackward(
            saved.embedded,
            weight("blk.0.attn_norm.weight"),
            saved.embeddedInverseRms,
            embeddedNormedGradient,
            gradient("blk.0.attn_norm.weight"),
            rows,
            d
        );
        const table = gradient("token_embd.weight");
        saved.inputTokens.forEach((token, row) => {
            for (let i = 0; i < d; i++) table[token * d + i] += embeddedGradient[row * d + i];
        });
        const fromGNorm = rmsNormBackward(
            saved.g,
            weight("blk.0.attn_norm_2.weight"),
            saved.gInverseRms,
            gNormedGradient,
            gradient("blk.0.attn_norm_2.weight"),
            rows,
            d
        );
        for (let i = 0; i < gGradient.length; i++) gGradient[i] += fromGNorm[i];
        prenormFromNext = gGradient;
    }
    // Step 0's g is fc · features.
    if (prenormFromNext !== undefined) {
        const rows = steps[0].inputTokens.length;
        blockedLinearBackward(
            forward.features,
            weight("fc.weight"),
            prenormFromNext,
            gradient("fc.weight"),
            rows,
            eagle3FeatureWidth(config),
            d
        );
    }
}
