import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {describe, expect, it, vi} from "vitest";
import {processLogits} from "../distributions/processLogits.js";
import {writeRandomLlamaPair} from "../gguf/randomLlamaModel.js";
import {nativeBackendAvailable} from "./nativeAddon.js";
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
            const sequence = await backend.createSequence();
            await expect(sequence.evaluateDistributions(tokens, settings[0], {vocabularyLimit: 0})).rejects.toThrow(/vocabularyLimit/);
            await sequence.dispose();
        } finally {
            await backend.dispose();
            await rm(directory, {recursive: true, force: true});
        }
    });
});

// Every sequence on one shared context (continuous batching), the 5th and later on contexts of their own.
describeBackendContract("NativeBackend, sequences batched on a shared context", (path, options) =>
    NativeBackend.load(path, {...options, batchedSequences: 4})
);
