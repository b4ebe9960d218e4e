import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import type {LlamaContext, LlamaContextSequence} from "node-llama-cpp";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {writeRandomLlamaPair, type RandomLlamaPair} from "../gguf/randomLlamaModel.js";
import {createDirectLogitsReader} from "./directLogits.js";
import {NodeLlamaCppBackend} from "./NodeLlamaCppBackend.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/** Largest |a − b| relative to max(1, |a|): both paths read the same float32 buffer, so this is 0 up to float32 rounding. */
function maximumRelativeDifference(a: Float64Array, b: Float64Array): number {
    let maximum = 0;
    for (let i = 0; i < a.length; i++) maximum = Math.max(maximum, Math.abs(a[i] - b[i]) / Math.max(1, Math.abs(a[i])));
    return maximum;
}

const float32Epsilon = 2 ** -23;

let directory: string;
let pair: RandomLlamaPair;
let direct: NodeLlamaCppBackend;
let controlled: NodeLlamaCppBackend;

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-direct-logits-"));
    // Extra pieces make the vocabulary larger than the byte fixture, so the native sort and the
    // token-indexed copy are exercised on an order that is not the identity.
    const pieces = Array.from({length: 740}, (_, index) => `p${index.toString(36)}`);
    pair = await writeRandomLlamaPair({directory, seed: 5, pieces});
    direct = await NodeLlamaCppBackend.load(pair.targetPath, {threads: 1});
    controlled = await NodeLlamaCppBackend.load(pair.targetPath, {threads: 1, logitsTransfer: "controlledEvaluate"});
});
afterAll(async () => {
    await direct?.dispose();
    await controlled?.dispose();
    await rm(directory, {recursive: true, force: true});
});

describe("direct logits path", () => {
    it("is the default on node-llama-cpp 3.22 and returns the same rows as controlledEvaluate", async () => {
        expect(direct.vocabularySize).toBe(1000);
        const fast = await direct.createSequence();
        const reference = await controlled.createSequence();
        expect(fast.logitsTransfer).toBe("direct");
        expect(reference.logitsTransfer).toBe("controlledEvaluate");

        const prompt = [1, ...direct.tokenize("Speculative decoding")];
        const positions = [0, 2, 5, prompt.length - 1];
        const fastRows = await fast.evaluate(prompt, {positions});
        const referenceRows = await reference.evaluate(prompt, {positions});
        expect(fastRows).toHaveLength(positions.length);
        for (let index = 0; index < positions.length; index++) {
            expect(fastRows[index].length).toBe(1000);
            expect(maximumRelativeDifference(fastRows[index], referenceRows[index])).toBeLessThanOrEqual(float32Epsilon);
        }
        // Rows at different positions really differ, so the comparison above is not vacuous.
        expect(maximumRelativeDifference(fastRows[0], fastRows[1])).toBeGreaterThan(1e-3);

        // A verification-shaped step after a rollback: every position of [pending, drafts…].
        await fast.rollback(3);
        await reference.rollback(3);
        const step = direct.tokenize("abcde");
        const all = step.map((_, index) => index);
        const fastStep = await fast.evaluate(step, {positions: all});
        const referenceStep = await reference.evaluate(step, {positions: all});
        for (let index = 0; index < step.length; index++)
            expect(maximumRelativeDifference(fastStep[index], referenceStep[index])).toBeLessThanOrEqual(float32Epsilon);
        expect(fast.tokens).toEqual(reference.tokens);

        await fast.dispose();
        await reference.dispose();
    });

    it("queues operations that are not awaited one by one", async () => {
        const sequence = await direct.createSequence();
        const tokens = [1, ...direct.tokenize("queue")];
        const first = sequence.evaluate(tokens, {positions: []});
        const rollback = sequence.rollback(2);
        const second = sequence.evaluate(tokens.slice(-2), {positions: [1]});
        await first;
        await rollback;
        const [row] = await second;
        const fresh = await direct.createSequence();
        const [expected] = await fresh.evaluate(tokens);
        expect(maximumRelativeDifference(row, expected)).toBeLessThan(1e-4);
        await sequence.dispose();
        await fresh.dispose();
    });

    it("reports that it is unavailable when node-llama-cpp's internals are missing", () => {
        const context = {model: {}} as unknown as LlamaContext;
        expect(createDirectLogitsReader(context, {} as LlamaContextSequence, 10)).toBeUndefined();
    });
});

describe("context capacity", () => {
    it("holds exactly contextSize tokens on both paths without node-llama-cpp shifting the oldest out", async () => {
        for (const backend of [direct, controlled]) {
            const sequence = await backend.createSequence();
            const tokens = Array.from({length: backend.contextSize}, (_, index) => 3 + (index % 200));
            const [row] = await sequence.evaluate(tokens);
            expect(row.length).toBe(backend.vocabularySize);
            expect(sequence.tokens).toEqual(tokens);
            await expect(sequence.evaluate([5])).rejects.toThrow("exceed the context size");
            await sequence.dispose();
        }
    });
});
