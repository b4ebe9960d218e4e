import {ByteTokenizer} from "../../../gguf/ByteTokenizer.js";
import {corpusMixturePresets} from "../../corpus/CorpusMixture.js";
import {generateCorpus} from "../../corpus/generateCorpus.js";
import {initializeLlamaWeights} from "../../model/initializeLlamaWeights.js";
import type {LlamaConfig} from "../../model/LlamaConfig.js";
import {tokenStreamOf} from "../tokenStreamOf.js";
import {createTrainerState, type TrainerState} from "../TrainerState.js";
import {defaultTrainingOptions, type TrainingOptions} from "../TrainingOptions.js";

/** A one-block byte-level llama small enough to train for a few dozen steps in a test. */
export const tinyConfig: LlamaConfig = {
    vocabularySize: new ByteTokenizer().size,
    embeddingLength: 32,
    blockCount: 1,
    headCount: 2,
    headCountKv: 1,
    feedForwardLength: 64,
    contextLength: 64,
    rmsNormEpsilon: 1e-5,
    ropeFreqBase: 10000,
    tiedOutput: true
};

export const tinyOptions: TrainingOptions = {
    ...defaultTrainingOptions,
    seed: 5,
    learningRate: 1e-2,
    warmupSteps: 5,
    totalSteps: 60,
    batchSize: 4,
    sequenceLength: 32
};

/** The byte tokens of a small generated corpus's training documents. */
export function tinyTokenStream(): Int32Array {
    const corpus = generateCorpus({seed: 1, samples: 300, mixture: corpusMixturePresets["balanced"], testProblemsPerTask: 0});
    return tokenStreamOf(
        corpus.train.map((sample) => sample.text),
        new ByteTokenizer()
    );
}

/** A trainer at step 0 with the same initial weights every time. */
export function freshTinyState(): TrainerState {
    return createTrainerState(tinyConfig, tinyOptions, initializeLlamaWeights(tinyConfig, {seed: 9}));
}
