import {InvalidInputError} from "../../errors.js";
import type {Random} from "../../random/Random.js";
import type {TrainingSequence} from "../model/llamaLossAndGradients.js";

/** `batchSize` windows of sequenceLength + 1 tokens at uniformly random offsets of the stream. */
export function sampleTrainingBatch(random: Random, stream: Int32Array, batchSize: number, sequenceLength: number): TrainingSequence[] {
    const span = sequenceLength + 1;
    if (stream.length < span)
        throw new InvalidInputError(`the token stream has ${stream.length} tokens, fewer than one window of ${span}`, "stream");
    return Array.from({length: batchSize}, () => {
        const start = Math.floor(random.nextDouble() * (stream.length - span + 1));
        return {tokens: Array.from(stream.subarray(start, start + span))};
    });
}
