import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {processLogits} from "../distributions/processLogits.js";
import {generate} from "../engine/generate.js";
import {writeRandomLlamaPair} from "../gguf/randomLlamaModel.js";
import {NativeBackend} from "./NativeBackend.js";
import {expectSameComputation, maximumDifference} from "./testing/describeBackendContract.js";
import {greedyMargin} from "./testing/greedyMargin.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/**
 * Continuous batching on a shared context against the same model with a context per sequence: rows
 * must be the same computation (up to llama.cpp's batch-size-dependent rounding, see
 * sameComputationTolerance), whatever else shares the step, and generations must not see each other.
 */
let directory: string;
let pair: {targetPath: string; draftPath: string};
let solo: NativeBackend;

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-batching-"));
    pair = await writeRandomLlamaPair({directory, seed: 23});
    solo = await NativeBackend.load(pair.targetPath, {contextSize: 256});
});

afterAll(async () => {
    await solo?.dispose();
    await rm(directory, {recursive: true, force: true});
});

const prompts = ["Once upon a time", "東京は", "def f(x):", "The answer is"];

async function soloLogits(tokens: number[], positions: number[]): Promise<Float64Array[]> {
    const sequence = await solo.createSequence();
    try {
        return await sequence.evaluate(tokens, {positions});
    } finally {
        await sequence.dispose();
    }
}

describe.each([{unifiedKvCache: false}, {unifiedKvCache: true}])("BatchScheduler on a shared native context, %o", ({unifiedKvCache}) => {
    let shared: NativeBackend;
    beforeAll(async () => {
        shared = await NativeBackend.load(pair.targetPath, {contextSize: 256, batchedSequences: 4, stepTokens: 8, unifiedKvCache});
    });
    afterAll(async () => {
        await shared?.dispose();
    });

    it("decodes concurrent evaluations of four sequences in one step, each with its own kind of rows", async () => {
        const sequences = await Promise.all(prompts.map(() => shared.createSequence()));
        const inputs = prompts.map((prompt) => [1, ...shared.tokenize(prompt)].slice(0, 6));
        try {
            const before = {...shared.batchStatistics!};
            const hot = {temperature: 1.3, topK: 0, topP: 1, minP: 0};
            const narrow = {temperature: 0.8, topK: 5, topP: 1, minP: 0};
            const [logits, argmax, hotRows, narrowRows] = await Promise.all([
                sequences[0].evaluate(inputs[0], {positions: [0, 3, 5]}),
                sequences[1].evaluateArgmax(inputs[1], {positions: [2, 5]}),
                sequences[2].evaluateDistributions(inputs[2], hot, {positions: [5]}),
                sequences[3].evaluateDistributions(inputs[3], narrow, {positions: [4, 5]})
            ]);
            const after = shared.batchStatistics!;
            expect(after.steps - before.steps).toBe(1);
            expect(after.submissions - before.submissions).toBe(4);
            expect(after.tokens - before.tokens).toBe(24);

            const expected0 = await soloLogits(inputs[0], [0, 3, 5]);
            logits.forEach((row, index) => expectSameComputation(row, expected0[index]));
            const expected1 = await soloLogits(inputs[1], [2, 5]);
            expect(argmax).toEqual(expected1.map((row) => row.indexOf(Math.max(...row))));
            for (const [rows, sampling, input, positions] of [
                [hotRows, hot, inputs[2], [5]],
                [narrowRows, narrow, inputs[3], [4, 5]]
            ] as const) {
                const expected = await soloLogits(input, [...positions]);
                rows.logits.forEach((row, index) => {
                    expectSameComputation(row, expected[index]);
                    // Each group's sampler rows are for its own settings, exactly processLogits of its logits.
                    expect(maximumDifference(rows.probabilities[index], processLogits(row, sampling))).toBeLessThan(1e-15);
                });
            }
            expect(narrowRows.probabilities[0].filter((value) => value > 0).length).toBe(5);
            expect(hotRows.probabilities[0].every((value) => value > 0)).toBe(true);
        } finally {
            await Promise.all(sequences.map((sequence) => sequence.dispose()));
        }
    });

    it("cuts a long prompt into chunks of the step budget, never inside its requested rows", async () => {
        const sequence = await shared.createSequence();
        const tokens = [1, ...shared.tokenize("a prompt long enough to be decoded in several steps of eight tokens each")];
        expect(tokens.length).toBeGreaterThan(30);
        const positions = [20, tokens.length - 1];
        try {
            const before = shared.batchStatistics!.steps;
            const rows = await sequence.evaluate(tokens, {positions});
            // Chunks of 8 up to index 20 (3 steps: 0–7, 8–15, 16–19), then the rest whole.
            expect(shared.batchStatistics!.steps - before).toBe(4);
            const expected = await soloLogits(tokens, positions);
            rows.forEach((row, index) => expectSameComputation(row, expected[index]));
            expect(sequence.timings.batchWaitMilliseconds).toBeGreaterThanOrEqual(0);
        } finally {
            await sequence.dispose();
        }
    });

    it("rolls a sequence back while another sequence's step is running, and continues from the right state", async () => {
        // One step for the whole long prompt (a few ms), so the rollback certainly arrives during it.
        const backend = await NativeBackend.load(pair.targetPath, {contextSize: 512, batchedSequences: 2, unifiedKvCache});
        const [long, short] = [await backend.createSequence(), await backend.createSequence()];
        const prefix = [1, ...backend.tokenize("rollback")];
        const longPrompt = [1, ...backend.tokenize("a long prompt keeps the shared context busy. ".repeat(8))];
        try {
            await short.evaluate([...prefix, 40, 41, 42]);
            const stepsBefore = backend.batchStatistics!.steps;
            const busy = long.evaluate(longPrompt);
            while (backend.batchStatistics!.steps === stepsBefore) await new Promise((resolve) => setImmediate(resolve));
            // The long prompt is decoding now: the rollback is handed to the next step's worker.
            const deferredBefore = backend.batchStatistics!.deferredRemovals;
            await short.rollback(3);
            expect(backend.batchStatistics!.deferredRemovals).toBe(deferredBefore + 1);
            const rows = await short.evaluate([50, 51], {positions: [0, 1]});
            await busy;
            const expected = await soloLogits([...prefix, 50, 51], [prefix.length, prefix.length + 1]);
            rows.forEach((row, index) => expectSameComputation(row, expected[index]));
            // The negative control: without the rollback the rows are far from these.
            const unrolled = await soloLogits([...prefix, 40, 41, 42, 50, 51], [prefix.length + 3, prefix.length + 4]);
            expect(maximumDifference(rows[1], unrolled[1])).toBeGreaterThan(0.05);
        } finally {
            await long.dispose();
            await short.dispose();
            await backend.dispose();
        }
    });

    it("gives sequences beyond its size contexts of their own", async () => {
        const sequences = await Promise.all(Array.from({length: 6}, () => shared.createSequence()));
        try {
            const tokens = [1, ...shared.tokenize("six at once")];
            const rows = await Promise.all(sequences.map((sequence) => sequence.evaluate(tokens)));
            const expected = await soloLogits(tokens, [tokens.length - 1]);
            for (const row of rows) expectSameComputation(row[0], expected[0]);
        } finally {
            await Promise.all(sequences.map((sequence) => sequence.dispose()));
        }
    });

    it("runs concurrent speculative generations that equal each one run alone", async () => {
        const sharedDraft = await NativeBackend.load(pair.draftPath, {contextSize: 256, batchedSequences: 4, unifiedKvCache});
        const soloDraft = await NativeBackend.load(pair.draftPath, {contextSize: 256});
        try {
            const options = {policy: {kind: "strict"} as const, gamma: 4, sampling: {temperature: 0}, maxTokens: 24};
            const before = shared.batchStatistics!.steps;
            const together = await Promise.all(prompts.map((prompt) => generate(shared, sharedDraft, prompt, options)));
            const steps = shared.batchStatistics!.steps - before;
            const verifications = together.reduce((total, result) => total + result.telemetry.steps + 1, 0);
            // Four generations in lockstep: far fewer shared steps than their evaluations.
            expect(steps).toBeLessThan(verifications * 0.6);
            for (const [index, prompt] of prompts.entries()) {
                const alone = await generate(solo, soloDraft, prompt, options);
                // Equal, unless the greedy path passes a near-tie, where batched rounding may choose the other token.
                if ((await greedyMargin(solo, prompt, alone.tokens)) > 2) expect(together[index].tokens).toEqual(alone.tokens);
                expect(together[index].telemetry.backend.targetDecode).toBeGreaterThan(0);
                // Time queued for shared steps is on its own line, never hidden in model time.
                expect(together[index].telemetry.backend.targetBatchWait).toBeGreaterThan(0);
                expect(alone.telemetry.backend.targetBatchWait).toBe(0);
            }
        } finally {
            await sharedDraft.dispose();
            await soloDraft.dispose();
        }
    });
});
