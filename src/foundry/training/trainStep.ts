import {llamaLossAndGradients} from "../model/llamaLossAndGradients.js";
import {adamWUpdate} from "./adamWUpdate.js";
import {clipGradientNorm} from "./clipGradientNorm.js";
import {learningRateAt} from "./learningRateAt.js";
import {sampleTrainingBatch} from "./sampleTrainingBatch.js";
import type {TrainerState} from "./TrainerState.js";

export interface TrainStepReport {
    /** The step just completed, 1-based. */
    readonly step: number;
    /** Mean cross-entropy of the batch before the update, in nats per token. */
    readonly loss: number;
    /** Global gradient norm before clipping. */
    readonly gradientNorm: number;
    readonly learningRate: number;
    readonly tokens: number;
}

/** One optimisation step: draw a batch, loss and gradients, clip, AdamW at the scheduled rate. */
export function trainStep(state: TrainerState, stream: Int32Array): TrainStepReport {
    const {options} = state;
    const batch = sampleTrainingBatch(state.random, stream, options.batchSize, options.sequenceLength);
    const {loss, weightTotal, gradients} = llamaLossAndGradients(state.config, state.weights, state.rope, batch);
    const gradientNorm = clipGradientNorm(gradients, options.gradientClip);
    const learningRate = learningRateAt(state.step, options);
    state.step++;
    adamWUpdate(state.weights, gradients, state.moments, state.step, learningRate, options, (name) => !name.includes("_norm."));
    return {step: state.step, loss, gradientNorm, learningRate, tokens: weightTotal};
}
