import {mkdtemp, readFile, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {CheckpointError} from "../../errors.js";
import {freshTinyState as freshState, tinyConfig as config, tinyOptions as options, tinyTokenStream} from "./testing/tinyTrainingRun.js";
import {loadCheckpoint, saveCheckpoint} from "./trainerCheckpoint.js";
import {trainStep} from "./trainStep.js";

// The tiny run that lowers the loss is in trainStep.tinyRun.test.ts (the `model` project: it trains a model).
const stream = tinyTokenStream();

let directory: string;
beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-training-"));
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

describe("trainStep", () => {
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
