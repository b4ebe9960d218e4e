import {InvalidInputError} from "../../errors.js";
import type {LlamaHyperparameters} from "../../gguf/llamaGgufMetadata.js";
import {widenPlacement} from "../../gguf/widenLlamaModelShape.js";
import type {LlamaConfig} from "../model/LlamaConfig.js";
import {tensorOf} from "../model/LlamaWeights.js";
import {type Eagle3Config, eagle3HeadDimension} from "./Eagle3Config.js";
import {eagle3TensorLayout} from "./eagle3TensorLayout.js";
import {checkEagle3Weights, type Eagle3Weights} from "./Eagle3Weights.js";

export interface Eagle3Head {
    readonly config: Eagle3Config;
    readonly weights: Eagle3Weights;
}

/**
 * The head for a widened twin of its target (src/gguf/widenLlamaModel.ts), by the twin's rule: the
 * twin's residual is the source's on its first d coordinates and zero elsewhere, its blocks sit at
 * widenPlacement's layers, and its RMSNorms have ε·d/D and gains ·√(d/D). So the widened head reads
 * the twin's inputs of the placed layers, is D wide with the twin's heads and feed-forward size,
 * holds the source head's weights on the source's coordinates (its heads spread like the twin's),
 * zeros elsewhere, and gains ·√(d/D): on the unperturbed twin it computes exactly what the source
 * head computes on the source target, and drafts the same tokens.
 */
export function widenEagle3Head(head: Eagle3Head, sourceTarget: LlamaConfig, twinTarget: LlamaConfig): Eagle3Head {
    const source = head.config;
    checkEagle3Weights(source, head.weights);
    const d = source.embeddingLength;
    const hs = eagle3HeadDimension(source);
    const D = twinTarget.embeddingLength;
    if (source.targetHiddenSize !== sourceTarget.embeddingLength || d !== sourceTarget.embeddingLength)
        throw new InvalidInputError("the head must be as wide as its source target", "head");
    if (D % hs !== 0 || D < d || twinTarget.feedForwardLength < source.feedForwardLength || twinTarget.blockCount < sourceTarget.blockCount)
        throw new InvalidInputError(`the twin (d ${D}, ff ${twinTarget.feedForwardLength}) does not hold the head`, "twin");
    if (source.headCount !== source.headCountKv) throw new InvalidInputError("grouped-query heads are not widened", "head");
    const layerPlacement = widenPlacement(hyperparameters(sourceTarget), hyperparameters(twinTarget)).layers;
    const heads = D / hs;
    const headPlacement = widenPlacement(
        {...hyperparameters(sourceTarget), headCount: source.headCount, headCountKv: source.headCount},
        {...hyperparameters(twinTarget), headCount: heads, headCountKv: heads}
    ).heads;
    const config: Eagle3Config = {
        ...source,
        targetLayers: [
            layerPlacement[source.targetLayers[0]],
            layerPlacement[source.targetLayers[1]],
            layerPlacement[source.targetLayers[2]]
        ],
        targetHiddenSize: D,
        embeddingLength: D,
        headCount: heads,
        headCountKv: heads,
        feedForwardLength: twinTarget.feedForwardLength,
        rmsNormEpsilon: twinTarget.rmsNormEpsilon
    };
    const gain = Math.sqrt(d / D);
    const from = (name: string): Float64Array => tensorOf(head.weights, name);
    const weights: Eagle3Weights = new Map();
    for (const shape of eagle3TensorLayout(config)) {
        const out = new Float64Array(shape.rows * shape.columns);
        const src = from(shape.name);
        const sourceColumns = src.length / (shape.rows === 1 ? 1 : sourceRows(shape.name, source));
        const copy = (row: number, sourceRow: number, column: number, sourceColumn: number, length: number): void =>
            out.set(
                src.subarray(sourceRow * sourceColumns + sourceColumn, sourceRow * sourceColumns + sourceColumn + length),
                row * shape.columns + column
            );
        if (shape.rows === 1) {
            out.fill(gain);
            for (let i = 0; i < d; i++) out[i] = src[i] * gain;
        } else if (shape.name === "fc.weight") {
            for (let row = 0; row < d; row++) for (let slot = 0; slot < 3; slot++) copy(row, row, slot * D, slot * d, d);
        } else if (shape.name === "token_embd.weight" || shape.name === "output.weight") {
            for (let row = 0; row < shape.rows; row++) copy(row, row, 0, 0, d);
        } else if (/attn_[qkv]\.weight$/.test(shape.name)) {
            headPlacement.forEach((twinHead, sourceHead) => {
                for (let r = 0; r < hs; r++) {
                    copy(twinHead * hs + r, sourceHead * hs + r, 0, 0, d);
                    copy(twinHead * hs + r, sourceHead * hs + r, D, d, d);
                }
            });
        } else if (shape.name.endsWith("attn_output.weight")) {
            for (let row = 0; row < d; row++)
                headPlacement.forEach((twinHead, sourceHead) => copy(row, row, twinHead * hs, sourceHead * hs, hs));
        } else if (shape.name.endsWith("ffn_down.weight")) {
            for (let row = 0; row < d; row++) copy(row, row, 0, 0, source.feedForwardLength);
        } else {
            // ffn_gate, ffn_up: the source's units on the source's coordinates.
            for (let row = 0; row < source.feedForwardLength; row++) copy(row, row, 0, 0, d);
        }
        weights.set(shape.name, out);
    }
    return {config, weights};
}

function sourceRows(name: string, config: Eagle3Config): number {
    return eagle3TensorLayout(config).find((shape) => shape.name === name)!.rows;
}

function hyperparameters(config: LlamaConfig): LlamaHyperparameters {
    return {
        contextLength: config.contextLength,
        embeddingLength: config.embeddingLength,
        blockCount: config.blockCount,
        feedForwardLength: config.feedForwardLength,
        headCount: config.headCount,
        headCountKv: config.headCountKv,
        layerNormRmsEpsilon: config.rmsNormEpsilon,
        ropeFreqBase: config.ropeFreqBase,
        vocabularySize: config.vocabularySize
    };
}
