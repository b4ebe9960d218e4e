import {mkdtemp, readFile, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {CheckpointError} from "../../errors.js";
import {ByteTokenizer} from "../../gguf/ByteTokenizer.js";
import {corpusMixturePresets} from "../corpus/CorpusMixture.js";
import {generateCorpus} from "../corpus/generateCorpus.js";
import {initializeLlamaWeights} from "../model/initializeLlamaWeights.js";
import type {LlamaConfig} from "../model/LlamaConfig.js";
import {loadCheckpoint, saveCheckpoint} from "./trainerCheckpoint.js";
import {createTrainerState, type TrainerState} from "./TrainerState.js";
import {trainStep} from "./trainStep.js";
import {defaultTrainingOptions, type TrainingOptions} from "./TrainingOptions.js";
import {tokenStreamOf} from "./tokenStreamOf.js";

const tokenizer = new ByteTokenizer();
const config: LlamaConfig = {
    vocabularySize: tokenizer.size,
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
const options: TrainingOptions = {
    ...defaultTrainingOptions,
    seed: 5,
    learningRate: 1e-2,
    warmupSteps: 5,
    totalSteps: 60,
    batchSize: 4,
    sequenceLength: 32
};
const corpus = generateCorpus({seed: 1, samples: 300, mixture: corpusMixturePresets["balanced"], testProblemsPerTask: 0});
const stream = tokenStreamOf(
    corpus.train.map((sample) => sample.text),
    tokenizer
);

function freshState(): TrainerState {
    return createTrainerState(config, options, initializeLlamaWeights(config, {seed: 9}));
}

let directory: string;
beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-training-"));
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

describe("trainStep", () => {
    it("lowers the loss on a tiny run, from about ln 260 towards the byte statistics of the corpus", () => {
        const state = freshState();
        const losses = Array.from({length: options.totalSteps}, () => trainStep(state, stream).loss);
        const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;
        expect(Math.abs(losses[0] - Math.log(260))).toBeLessThan(0.1);
        expect(mean(losses.slice(-10))).toBeLessThan(mean(losses.slice(0, 5)) - 1.2); // observed: 5.2 → 3.5
        expect(state.step).toBe(options.totalSteps);
    });

    it("resumes from a checkpoint to exactly the weights, moments and batches of an uninterrupted run", async () => {
        const uninterrupted = freshState();
        const straightLosses = Array.from({length: 8}, () => trainStep(uninterrupted, stream).loss);

        const interrupted = freshState();
        const firstLosses = Array.from({length: 3}, () => trainStep(interrupted, stream).loss);
        const path = join(directory, "run.ckpt");
        await saveCheckpoint(path, interrupted);
        const resumed = await loadCheckpoint(path, {config, options});
        expect(resumed.step).toBe(3);
        const laterLosses = Array.from({length: 5}, () => trainStep(resumed, stream).loss);

        expect([...firstLosses, ...laterLosses]).toEqual(straightLosses);
        for (const [name, values] of uninterrupted.weights) {
            expect(resumed.weights.get(name), name).toEqual(values);
            expect(resumed.moments.first.get(name), name).toEqual(uninterrupted.moments.first.get(name));
            expect(resumed.moments.second.get(name), name).toEqual(uninterrupted.moments.second.get(name));
        }
        expect(resumed.random.getState()).toEqual(uninterrupted.random.getState());
    });

    it("says clearly why a checkpoint cannot be used: missing, corrupt, truncated or another run's", async () => {
        const reason = async (path: string, expected = {}): Promise<string> => {
            try {
                await loadCheckpoint(path, expected);
                return "loaded";
            } catch (error) {
                expect(error).toBeInstanceOf(CheckpointError);
                return `${(error as CheckpointError).reason}: ${(error as Error).message}`;
            }
        };
        expect(await reason(join(directory, "absent.ckpt"))).toMatch(/^missing: .*no such checkpoint file/);

        const path = join(directory, "valid.ckpt");
        await saveCheckpoint(path, freshState());
        const bytes = await readFile(path);
        expect(await reason(path)).toBe("loaded");

        await writeFile(join(directory, "text.ckpt"), "not a checkpoint at all");
        expect(await reason(join(directory, "text.ckpt"))).toMatch(/^corrupt: .*wrong magic bytes/);
        await writeFile(join(directory, "truncated.ckpt"), bytes.subarray(0, bytes.length - 8));
        expect(await reason(join(directory, "truncated.ckpt"))).toMatch(/^corrupt: .*truncated/);
        const garbled = Buffer.from(bytes);
        garbled.write("#", 12, "latin1"); // inside the JSON header
        await writeFile(join(directory, "garbled.ckpt"), garbled);
        expect(await reason(join(directory, "garbled.ckpt"))).toMatch(/^corrupt: .*malformed header/);

        expect(await reason(path, {config: {...config, embeddingLength: 64}})).toMatch(
            /^mismatch: config\.embeddingLength: the checkpoint has 32, this run 64/
        );
        expect(await reason(path, {options: {...options, totalSteps: 100}})).toMatch(/^mismatch: options\.totalSteps/);
    });
});
