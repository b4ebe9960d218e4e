import {InvalidInputError} from "../../errors.js";
import type {RopeTable} from "../model/RopeTable.js";
import {eagle3Backward} from "./eagle3Backward.js";
import type {Eagle3Config} from "./Eagle3Config.js";
import type {Eagle3Example} from "./Eagle3Example.js";
import {eagle3Forward} from "./eagle3Forward.js";
import {type Eagle3Weights, zeroEagle3Weights} from "./Eagle3Weights.js";

export interface Eagle3LossOptions {
    /** Drafting steps unrolled in training (the training-time test); 1 trains step 0 alone. */
    readonly unrolledSteps: number;
    /** Step k's loss weight is stepDecay^k (EAGLE-3 weighs later steps down: they count only once earlier ones are accepted). Default 0.8. */
    readonly stepDecay?: number;
}

export interface Eagle3StepStatistics {
    /** Σ cross-entropy (nats) over the step's rows. */
    loss: number;
    /** Rows whose argmax is the label: greedy draft tokens the target would accept at this step. */
    correct: number;
    rows: number;
}

export interface Eagle3LossAndGradients {
    /** Weighted mean cross-entropy over every step's rows, in nats. */
    readonly loss: number;
    readonly weightTotal: number;
    readonly gradients: Eagle3Weights;
    readonly steps: Eagle3StepStatistics[];
}

/**
 * Cross-entropy of the head's drafts against the target's own next tokens, over a batch and every
 * unrolled step (root P of step k predicts tokens[P + k + 2]), weighted stepDecay^k and normalised by
 * the total weight, with its exact gradient.
 */
export function eagle3LossAndGradients(
    config: Eagle3Config,
    weights: Eagle3Weights,
    rope: RopeTable,
    batch: readonly Eagle3Example[],
    options: Eagle3LossOptions
): Eagle3LossAndGradients {
    const decay = options.stepDecay ?? 0.8;
    if (!(decay > 0) || !Number.isFinite(decay)) throw new InvalidInputError(`must be a finite positive number, got ${decay}`, "stepDecay");
    const forwards = batch.map((example) => eagle3Forward(config, weights, rope, example, options.unrolledSteps));
    let weightTotal = 0;
    for (const forward of forwards)
        forward.logits.forEach((rows, k) => (weightTotal += decay ** k * (rows.length / config.vocabularySize)));
    const gradients = zeroEagle3Weights(config);
    const steps: Eagle3StepStatistics[] = Array.from({length: options.unrolledSteps}, () => ({loss: 0, correct: 0, rows: 0}));
    const vocabulary = config.vocabularySize;
    let loss = 0;
    forwards.forEach((forward, index) => {
        const tokens = batch[index].tokens;
        const logitGradients = forward.logits.map((logits, k) => {
            const weight = decay ** k / weightTotal;
            const rows = logits.length / vocabulary;
            const result = new Float64Array(logits.length);
            for (let root = 0; root < rows; root++) {
                const offset = root * vocabulary;
                const label = tokens[forward.steps[k].firstRoot + root + k + 2];
                let maximum = -Infinity;
                let best = 0;
                for (let v = 0; v < vocabulary; v++)
                    if (logits[offset + v] > maximum) {
                        maximum = logits[offset + v];
                        best = v;
                    }
                let total = 0;
                for (let v = 0; v < vocabulary; v++) total += Math.exp(logits[offset + v] - maximum);
                const crossEntropy = maximum + Math.log(total) - logits[offset + label];
                loss += weight * crossEntropy;
                steps[k].loss += crossEntropy;
                steps[k].rows++;
                if (best === label) steps[k].correct++;
                for (let v = 0; v < vocabulary; v++) result[offset + v] = (weight * Math.exp(logits[offset + v] - maximum)) / total;
                result[offset + label] -= weight;
            }
            return result;
        });
        eagle3Backward(config, weights, rope, forward, logitGradients, gradients);
    });
    return {loss, weightTotal, gradients, steps};
}
