import {mkdtemp, rm} from "node:fs/promises";
import {availableParallelism, tmpdir} from "node:os";
import {join} from "node:path";
import {describe, expect, it, vi} from "vitest";
import {processLogits} from "../distributions/processLogits.js";
import {writeRandomLlamaPair} from "../gguf/randomLlamaModel.js";
import {NativeOutputMode, nativeAddon, nativeBackendAvailable} from "./nativeAddon.js";
import {NativeBackend} from "./NativeBackend.js";
import {describeBackendContract} from "./testing/describeBackendContract.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

describe("native addon", () => {
    // `npm ci` builds it (scripts/buildNativeBackend.mjs); a machine without a compiler fails here, not silently.
    it("is built and loads", () => {
        expect(nativeBackendAvailable()).toBe(true);
    });
});

describeBackendContract("NativeBackend", (path, options) => NativeBackend.load(path, options));

describe("NativeBackend sampler rows", () => {
    it("equal processLogits of the same logits for every sampler setting, and refuse what it refuses", async () => {
        const directory = await mkdtemp(join(tmpdir(), "specgate-native-rows-"));
        // 2,000 tokens: enough for top-k, top-p and min-p to cut something.
        const pair = await writeRandomLlamaPair({
            directory,
            seed: 5,
            pieces: Array.from({length: 1740}, (_, index) => `q${index.toString(36)}`)
        });
        const backend = await NativeBackend.load(pair.targetPath);
        try {
            const tokens = [1, ...backend.tokenize("sampler rows")];
            const positions = [0, tokens.length - 1];
            const settings = [
                {temperature: 0.8, topK: 0, topP: 1, minP: 0},
                {temperature: 1.3, topK: 5, topP: 1, minP: 0},
                {temperature: 0.7, topK: 0, topP: 0.9, minP: 0},
                {temperature: 1, topK: 40, topP: 0.95, minP: 0.05},
                {temperature: 0, topK: 0, topP: 1, minP: 0}
            ];
            for (const sampling of settings) {
                const sequence = await backend.createSequence();
                const {logits, probabilities} = await sequence.evaluateDistributions(tokens, sampling, {positions});
                expect(logits).toHaveLength(2);
                for (let index = 0; index < positions.length; index++) {
                    const expected = processLogits(logits[index], sampling);
                    let largest = 0;
                    for (let token = 0; token < expected.length; token++)
                        largest = Math.max(largest, Math.abs(probabilities[index][token] - expected[token]));
                    // Same arithmetic in the same order; only exp() may differ, by an ulp.
                    expect(largest).toBeLessThan(1e-15);
                    expect(probabilities[index].filter((value) => value > 0).length).toBe(expected.filter((value) => value > 0).length);
                }
                await sequence.dispose();
            }
            // Rows over the first 1,500 ids only: processLogits of the cut row, zeros beyond.
            for (const sampling of settings) {
                const sequence = await backend.createSequence();
                const {logits, probabilities} = await sequence.evaluateDistributions(tokens, sampling, {positions, vocabularyLimit: 1500});
                for (let index = 0; index < positions.length; index++) {
                    const expected = processLogits(logits[index].subarray(0, 1500), sampling);
                    let largest = 0;
                    for (let token = 0; token < expected.length; token++)
                        largest = Math.max(largest, Math.abs(probabilities[index][token] - expected[token]));
                    expect(largest).toBeLessThan(1e-15);
                    expect(probabilities[index].subarray(1500).every((value) => value === 0)).toBe(true);
                }
                await sequence.dispose();
            }
            // withoutLogits: the same sampler rows (bit for bit), no logit rows handed over.
            for (const sampling of settings) {
                const full = await backend.createSequence();
                const alone = await backend.createSequence();
                const expected = await full.evaluateDistributions(tokens, sampling, {positions});
                const rows = await alone.evaluateDistributions(tokens, sampling, {positions, withoutLogits: true});
                expect(rows.logits).toHaveLength(0);
                expect(rows.probabilities).toHaveLength(2);
                for (let index = 0; index < positions.length; index++)
                    expect(Array.from(rows.probabilities[index])).toEqual(Array.from(expected.probabilities[index]));
                // transientRows: the same rows, written into memory the next call of the sequence reuses.
                const transient = await backend.createSequence();
                const reused = await transient.evaluateDistributions(tokens, sampling, {
                    positions,
                    withoutLogits: true,
                    transientRows: true
                });
                for (let index = 0; index < positions.length; index++)
                    expect(Array.from(reused.probabilities[index])).toEqual(Array.from(expected.probabilities[index]));
                const next = await transient.evaluateDistributions([tokens[1]], sampling, {withoutLogits: true, transientRows: true});
                expect(next.probabilities[0].buffer).toBe(reused.probabilities[0].buffer);
                await transient.dispose();
                await full.dispose();
                await alone.dispose();
            }
            const sequence = await backend.createSequence();
            await expect(sequence.evaluateDistributions(tokens, settings[0], {vocabularyLimit: 0})).rejects.toThrow(/vocabularyLimit/);
            await sequence.dispose();
        } finally {
            await backend.dispose();
            await rm(directory, {recursive: true, force: true});
        }
    });
});

describe("NativeBackend threads", () => {
    it("never computes with more threads than the cores it may use, and with the threads asked for when told not to adapt", async () => {
        const cores = availableParallelism();
        const addon = nativeAddon("cpu");
        const model = new addon.NativeModel(new URL("../../models/target/model.gguf", import.meta.url).pathname);
        const decode = async (threads: number, adaptiveThreads?: boolean): Promise<number | undefined> => {
            const context = new addon.NativeContext(model, {contextSize: 64, sequences: 1, batchSize: 64, threads, adaptiveThreads});
            try {
                const destination = new Int32Array(1);
                const outputs = Int32Array.of(0);
                const result = await context.decode(Int32Array.of(1), Int32Array.of(0), Int32Array.of(0), [
                    {outputs, mode: NativeOutputMode.Argmax, destination}
                ]);
                return result.threads;
            } finally {
                context.dispose();
            }
        };
        try {
            expect(await decode(cores + 1)).toBeLessThanOrEqual(cores);
            expect(await decode(1)).toBe(1);
            expect(await decode(cores + 1, false)).toBe(cores + 1);
        } finally {
            model.dispose();
        }
    });
});

// Every sequence on one shared context (continuous batching), the 5th and later on contexts of their own.
describeBackendContract("NativeBackend, sequences batched on a shared context", (path, options) =>
    NativeBackend.load(path, {...options, batchedSequences: 4})
);
