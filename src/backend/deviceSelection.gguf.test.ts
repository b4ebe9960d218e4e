import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {processLogits} from "../distributions/processLogits.js";
import {generate} from "../engine/generate.js";
import type {GenerationOptionsInput} from "../engine/GenerationOptions.js";
import {deviceDrawIdentity, engineIdentity, hostRowDrawIdentity} from "../fingerprint/engineIdentity.js";
import {chiSquareGoodnessOfFit} from "../statistics/chiSquareGoodnessOfFit.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {deviceSelectionMinimumVocabulary, NativeBackend} from "./NativeBackend.js";

vi.setConfig(modelTestTimeouts);

/**
 * Token selection inside the graph (NativeBackendOptions.deviceSelection, native/src/DeviceSelection.h)
 * on the CPU build, with the shipped family pair: at temperature 0 every lossless arm gives the text it
 * gives with the rows reduced on the host, while only token ids leave the graph; at T > 0 target-only
 * draws on the device with the generation's uniforms, strict verification of lookup and draft-model
 * drafts reads a few values per row, and the other verifications still copy whole rows (the telemetry
 * names why).
 */
const targetPath = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const draftPath = new URL("../../models/draft/model.gguf", import.meta.url).pathname;
const greedy = {temperature: 0, topK: 0, topP: 1, minP: 0};
const prompts = ["Once upon a time", "Question: Tom has 3 apples and buys 4 more. How many apples does he have?\nAnswer:"];

interface Pair {
    target: NativeBackend;
    draft: NativeBackend;
}
const pairs = new Map<boolean, Pair>();

async function loadPair(deviceSelection: boolean, extra: {batchedSequences?: number} = {}): Promise<Pair> {
    const options = {threads: 1, gpu: "off" as const, deviceSelection, ...extra};
    return {target: await NativeBackend.load(targetPath, options), draft: await NativeBackend.load(draftPath, options)};
}

beforeAll(async () => {
    pairs.set(false, await loadPair(false));
    pairs.set(true, await loadPair(true));
});
afterAll(async () => {
    for (const {target, draft} of pairs.values()) {
        await draft.dispose();
        await target.dispose();
    }
});

const arms: Array<{name: string; usesDraft: boolean; options: GenerationOptionsInput}> = [
    {name: "target-only", usesDraft: false, options: {gamma: 0}},
    {name: "strict γ = 4", usesDraft: true, options: {policy: {kind: "strict"}, gamma: 4}},
    {name: "greedy γ = 4", usesDraft: true, options: {policy: {kind: "greedy"}, gamma: 4}},
    {name: "block γ = 4", usesDraft: true, options: {policy: {kind: "block"}, gamma: 4}},
    {name: "tree 2 × 4", usesDraft: true, options: {tree: {width: 2, depth: 4}}}
];

async function run(deviceSelection: boolean, arm: (typeof arms)[number], prompt: string, sampling = greedy, seed = 0) {
    const {target, draft} = pairs.get(deviceSelection)!;
    return generate(target, arm.usesDraft ? draft : undefined, prompt, {...arm.options, sampling, maxTokens: 40, ignoreEos: true, seed});
}

describe("device token selection at temperature 0", () => {
    it.each(arms)("$name: the same tokens as host selection, at most 64 bytes per emitted token", async (arm) => {
        for (const prompt of prompts) {
            const host = await run(false, arm, prompt);
            const device = await run(true, arm, prompt);
            expect(device.tokens).toEqual(host.tokens);
            const vocabularyRow = 4 * pairs.get(true)!.target.vocabularySize;
            expect(host.telemetry.deviceToHostBytesPerToken!).toBeGreaterThanOrEqual(vocabularyRow);
            if (arm.name === "target-only" || arm.name === "strict γ = 4")
                expect(device.telemetry.deviceToHostBytesPerToken!).toBeLessThanOrEqual(64);
            else expect(device.telemetry.deviceToHostBytesPerToken!).toBeLessThan(vocabularyRow);
        }
    });

    it("reports the bytes in the telemetry's JSON, target and draft apart", async () => {
        const result = await run(true, arms[1]!, prompts[0]!);
        const bytes = result.telemetry.toJSON().deviceToHostBytes!;
        expect(bytes.total).toBe(bytes.target + bytes.draft);
        // One 4-byte id per target row: the prompt's last row, then at most γ + 1 per verification step.
        expect(bytes.target % 4).toBe(0);
        expect(bytes.target).toBeGreaterThanOrEqual(4 * (1 + result.telemetry.steps));
        expect(bytes.target).toBeLessThanOrEqual(4 * (1 + 5 * result.telemetry.steps));
        expect(bytes.draft).toBeGreaterThan(0);
        expect(bytes.perToken).toBeCloseTo(bytes.total / result.telemetry.emittedTokens, 9);
    });
});

describe("which rows are selected on the device", () => {
    it("is chosen by default only for vocabularies of at least deviceSelectionMinimumVocabulary ids", async () => {
        expect(pairs.get(true)!.target.tokenSelection).toBe("device");
        expect(pairs.get(false)!.target.tokenSelection).toBe("host");
        const byDefault = await NativeBackend.load(targetPath, {threads: 1, gpu: "off"});
        try {
            expect(byDefault.vocabularySize).toBeLessThan(deviceSelectionMinimumVocabulary);
            expect(byDefault.tokenSelection).toBe("host");
        } finally {
            await byDefault.dispose();
        }
    });

    it("enters the engine's identity (and so the decode-path fingerprint) only when the device selects", async () => {
        const device = await engineIdentity("native", undefined, "device");
        expect(device.tokenSelection).toBe("device");
        // A draw at T > 0 follows its own rule there: the fingerprint names it.
        expect(device.deviceDraw).toBe(deviceDrawIdentity);
        // The Vulkan build picks argmax ids on the device and draws on the host from the rows: its fingerprint says so.
        const vulkan = await engineIdentity("native", {build: "vulkan", device: "llvmpipe"}, "device");
        expect(vulkan.deviceDraw).toBe(hostRowDrawIdentity);
        expect((await engineIdentity("native", {build: "cuda", device: "H200"}, "device")).deviceDraw).toBe(deviceDrawIdentity);
        const host = await engineIdentity("native");
        expect(host).not.toHaveProperty("tokenSelection");
        expect(host).not.toHaveProperty("deviceDraw");
    });
});

describe("device token selection at temperature 1", () => {
    const sampling = {temperature: 1, topK: 0, topP: 1, minP: 0};

    it("target-only draws on the device: at most 64 bytes per emitted token, and the host's text for the same seed", async () => {
        for (const prompt of prompts) {
            const host = await run(false, arms[0]!, prompt, sampling, 7);
            const device = await run(true, arms[0]!, prompt, sampling, 7);
            // The same uniforms, drawn by the same inverse-CDF rule (in float32 on the device): the same tokens
            // unless a uniform falls within float rounding of a cumulative boundary.
            expect(device.tokens).toEqual(host.tokens);
            expect(device.telemetry.deviceToHostBytesPerToken!).toBeLessThanOrEqual(64);
            expect(device.telemetry.rowsCopied).toBeNull();
            expect(host.telemetry.deviceToHostBytesPerToken!).toBeGreaterThanOrEqual(4 * pairs.get(true)!.target.vocabularySize);
        }
    });

    it("target-only's first token follows softmax(logits / T) (χ², 1500 seeds)", async () => {
        const {target} = pairs.get(true)!;
        // A context whose next-token distribution is broad: 11 ids hold 99.7% of it at T = 1.
        const prompt = "x";
        const sequence = await pairs.get(false)!.target.createSequence();
        const [logits] = await sequence.evaluate([target.bosToken!, ...target.tokenize(prompt)]);
        await sequence.dispose();
        const expected = processLogits(logits!, sampling);
        const observed = new Float64Array(target.vocabularySize);
        for (let seed = 0; seed < 1500; seed++) {
            const result = await generate(target, undefined, prompt, {gamma: 0, sampling, maxTokens: 1, ignoreEos: true, seed});
            expect(result.telemetry.toJSON().deviceToHostBytes!.target).toBe(4);
            observed[result.tokens[0]!]++;
        }
        const test = chiSquareGoodnessOfFit(observed, expected);
        expect(test.bins).toBeGreaterThan(5);
        expect(test.pValue).toBeGreaterThan(0.001);
    });

    it("strict verification of n-gram drafts reads 8 bytes per target row, and its first token follows softmax(logits / T) (χ², 1500 seeds)", async () => {
        const {target} = pairs.get(true)!;
        const warm = {temperature: 1.5, topK: 0, topP: 1, minP: 0};
        // A prompt whose end occurred before: the n-gram drafter proposes from the first step on.
        const prompt = "a b a c a d a";
        const sequence = await pairs.get(false)!.target.createSequence();
        const [logits] = await sequence.evaluate([target.bosToken!, ...target.tokenize(prompt)]);
        await sequence.dispose();
        const expected = processLogits(logits!, warm);
        const observed = new Float64Array(target.vocabularySize);
        let drafted = 0;
        let accepted = 0;
        for (let seed = 0; seed < 1500; seed++) {
            // Two tokens: the first step drafts one (a step drafts at most the tokens still wanted, less one).
            const result = await generate(target, undefined, prompt, {
                drafter: "ngram:1:3",
                gamma: 4,
                sampling: warm,
                maxTokens: 2,
                ignoreEos: true,
                seed
            });
            drafted += result.telemetry.draftedPerPosition[0] ?? 0;
            accepted += result.telemetry.acceptedPerPosition[0] ?? 0;
            expect(result.telemetry.rowsCopied).toBeNull();
            // At most two steps of two rows, each an id and a probability.
            expect(result.telemetry.toJSON().deviceToHostBytes!.target).toBeLessThanOrEqual(2 * 2 * 8);
            observed[result.tokens[0]!]++;
        }
        // Every first step drafted, and both verdicts occurred: accepted drafts and residual draws.
        expect(drafted).toBe(1500);
        expect(accepted).toBeGreaterThan(150);
        expect(accepted).toBeLessThan(1350);
        const test = chiSquareGoodnessOfFit(observed, expected);
        expect(test.bins).toBeGreaterThan(3);
        expect(test.pValue).toBeGreaterThan(0.001);
    });

    /** The target's sampler row after `prompt`, read on the host. */
    async function firstRow(prompt: string, sampling: {temperature: number; topK: number; topP: number; minP: number}) {
        const {target} = pairs.get(false)!;
        const sequence = await target.createSequence();
        const [logits] = await sequence.evaluate([target.bosToken!, ...target.tokenize(prompt)]);
        await sequence.dispose();
        return processLogits(logits!, sampling);
    }

    it.each([
        // A broad first row the draft model rarely matches: nearly every first draft is rejected.
        {name: "T = 1", prompt: "x", temperature: 1, width: 16, seeds: 600},
        // Drafts accepted about one time in five.
        {name: "T = 2", prompt: "x", temperature: 2, width: 16, seeds: 1000},
        // One candidate per row: the whole-row fallback draws the residual at most rejections.
        {name: "T = 3, K = 1", prompt: prompts[0]!, temperature: 3, width: 1, seeds: 1500}
    ])(
        "$name: strict verification of the draft model's tokens reads 8 + 8K bytes per target row, and its first token follows the target's row (χ²)",
        async ({prompt, temperature, width, seeds}) => {
            const {target, draft} = pairs.get(true)!;
            const warm = {temperature, topK: 0, topP: 1, minP: 0};
            const expected = await firstRow(prompt, warm);
            const observed = new Float64Array(target.vocabularySize);
            const rowBytes = 8 + 8 * width;
            let accepted = 0;
            let fallbacks = 0;
            for (let seed = 0; seed < seeds; seed++) {
                // Two tokens: the first step drafts one (a step drafts at most the tokens still wanted, less one).
                const result = await generate(target, draft, prompt, {
                    gamma: 4,
                    sampling: warm,
                    maxTokens: 2,
                    ignoreEos: true,
                    seed,
                    residualCandidates: width
                });
                const {telemetry} = result;
                expect(telemetry.draftedPerPosition[0]).toBe(1);
                accepted += telemetry.acceptedPerPosition[0]!;
                const bytes = telemetry.toJSON().deviceToHostBytes!;
                if (telemetry.rowsCopied === null) {
                    // At most two steps, of two rows and one; the draft: a drawn row and one read again at a rejection,
                    // each an id, its probability and K more (the draft keeps one sampler chain for both).
                    expect(bytes.target).toBeLessThanOrEqual(3 * rowBytes);
                    expect(bytes.draft).toBeLessThanOrEqual(2 * (8 + 4 * width));
                } else {
                    expect(telemetry.rowsCopied).toBe("residual from whole rows (every candidate rejected)");
                    // The fallback reads the rejected row whole, once per model.
                    expect(bytes.target).toBeLessThanOrEqual(3 * rowBytes + 4 * target.vocabularySize);
                    fallbacks++;
                }
                observed[result.tokens[0]!]++;
            }
            // Both verdicts occurred, and with K = 1 the fallback too.
            expect(accepted).toBeGreaterThan(0);
            expect(accepted).toBeLessThan(seeds * 0.9);
            if (width === 1) expect(fallbacks).toBeGreaterThan(seeds / 10);
            const test = chiSquareGoodnessOfFit(observed, expected);
            expect(test.bins).toBeGreaterThan(3);
            expect(test.pValue).toBeGreaterThan(0.001);
        }
    );

    it("a draft model that does not select on the device leaves the target's rows whole too, and says why", async () => {
        const result = await generate(pairs.get(true)!.target, pairs.get(false)!.draft, prompts[0]!, {
            ...arms[1]!.options,
            sampling,
            maxTokens: 8,
            seed: 1
        });
        expect(result.telemetry.rowsCopied).toBe("verification at T > 0 with a draft model");
        expect(result.telemetry.deviceToHost.target).toBeGreaterThanOrEqual(4 * pairs.get(true)!.target.vocabularySize);
    });

    it.each([
        {name: "logprobs", options: {gamma: 0, logprobs: 2}, usesDraft: false, reason: "logprobs"},
        {
            name: "greedy verification at T = 1",
            options: {gamma: 0, policy: {kind: "greedy"}},
            usesDraft: false,
            reason: "policy reads whole rows"
        },
        {
            name: "fuzzy γ = 4",
            options: {gamma: 4, policy: {kind: "fuzzy", threshold: 0.5}},
            usesDraft: true,
            reason: "policy reads whole rows"
        }
    ] as const)("$name: rows cross whole and the telemetry names why", async ({options, usesDraft, reason}) => {
        const {target, draft} = pairs.get(true)!;
        const result = await generate(target, usesDraft ? draft : undefined, prompts[0]!, {...options, sampling, maxTokens: 8, seed: 1});
        expect(result.telemetry.rowsCopied).toBe(reason);
        expect(result.telemetry.deviceToHostBytesPerToken!).toBeGreaterThanOrEqual(4 * target.vocabularySize);
    });
});

describe("device token selection on a shared context (continuous batching)", () => {
    it("gives each greedy sequence its host-selected text while another sequence of the same steps samples at T = 1", async () => {
        const shared = await loadPair(true, {batchedSequences: 3});
        try {
            const arm = arms[1]!;
            const references = await Promise.all(prompts.map((prompt) => run(false, arm, prompt)));
            const sampling = {temperature: 1, topK: 0, topP: 1, minP: 0};
            const options = {...arm.options, maxTokens: 40, ignoreEos: true};
            const [first, second, sampled] = await Promise.all([
                generate(shared.target, shared.draft, prompts[0]!, {...options, sampling: greedy}),
                generate(shared.target, shared.draft, prompts[1]!, {...options, sampling: greedy}),
                generate(shared.target, shared.draft, prompts[0]!, {...options, sampling, seed: 3})
            ]);
            expect(first.tokens).toEqual(references[0]!.tokens);
            expect(second.tokens).toEqual(references[1]!.tokens);
            expect(sampled.tokens.length).toBe(40);
        } finally {
            await shared.draft.dispose();
            await shared.target.dispose();
        }
    });

    it("draws each target-only T > 0 sequence on the device beside greedy ones, as on a context of its own", async () => {
        const shared = await loadPair(true, {batchedSequences: 4});
        try {
            const sampling = {temperature: 1, topK: 0, topP: 1, minP: 0};
            const warm = {temperature: 0.7, topK: 20, topP: 0.9, minP: 0};
            const alone = await Promise.all([run(true, arms[0]!, prompts[0]!, sampling, 5), run(true, arms[0]!, prompts[1]!, warm, 9)]);
            const options = {gamma: 0, maxTokens: 40, ignoreEos: true};
            const [drawn, other, greedyText] = await Promise.all([
                generate(shared.target, undefined, prompts[0]!, {...options, sampling, seed: 5}),
                generate(shared.target, undefined, prompts[1]!, {...options, sampling: warm, seed: 9}),
                generate(shared.target, shared.draft, prompts[1]!, {...arms[1]!.options, maxTokens: 40, ignoreEos: true, sampling: greedy})
            ]);
            expect(drawn.tokens).toEqual(alone[0]!.tokens);
            expect(other.tokens).toEqual(alone[1]!.tokens);
            expect(greedyText.tokens).toEqual((await run(false, arms[1]!, prompts[1]!)).tokens);
            for (const result of [drawn, other]) expect(result.telemetry.deviceToHostBytesPerToken!).toBeLessThanOrEqual(64);
        } finally {
            await shared.draft.dispose();
            await shared.target.dispose();
        }
    });
});
