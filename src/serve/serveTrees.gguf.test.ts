import OpenAI from "openai";
import type {CompletionCreateParamsNonStreaming} from "openai/resources";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {NativeBackend} from "../backend/NativeBackend.js";
import {generate} from "../engine/generate.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {type RunningServeServer, startServeServer} from "./startServeServer.js";

vi.setConfig(modelTestTimeouts);

/**
 * Token trees behind the HTTP API, in continuous batching: the server's default tree (--tree 2x4)
 * drafts and verifies concurrent requests in shared steps (tree nodes of several requests in one
 * llama_decode, each on its own branches), and every answer at T = 0 is target-only greedy decoding's.
 */
const targetPath = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const draftPath = new URL("../../models/draft/model.gguf", import.meta.url).pathname;

let target: NativeBackend;
let draft: NativeBackend;
let server: RunningServeServer;
let client: OpenAI;

beforeAll(async () => {
    const options = {contextSize: 256, batchedSequences: 4, treeBranches: 2, inlineBelowMilliseconds: 1};
    target = await NativeBackend.load(targetPath, options);
    draft = await NativeBackend.load(draftPath, options);
    server = await startServeServer({
        target,
        draft,
        modelName: "family",
        modelFiles: {target: targetPath, draft: draftPath},
        speculative: {policy: {kind: "strict"}, gamma: 4, tree: {width: 2, depth: 4}},
        port: 0,
        maxConcurrency: 4,
        maxQueue: 16
    });
    client = new OpenAI({baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0});
});

afterAll(async () => {
    await server?.close();
    await draft?.dispose();
    await target?.dispose();
});

type Request = Omit<CompletionCreateParamsNonStreaming, "model"> & {speculative?: unknown};

const prompts = [
    "Question: Tom has 3 apples and buys 4 more. How many apples does he have?\nAnswer:",
    "The",
    "Once upon a time",
    "In the beginning"
];

interface SpeculativeSummary {
    tree?: string;
    num_drafts?: number;
    num_draft_tokens?: number;
    drafters?: {model: {draftedPerPosition: number[]}};
}

async function complete(request: Request): Promise<{text: string; speculative: SpeculativeSummary}> {
    const reply = (await client.completions.create({model: "family", ...request} as CompletionCreateParamsNonStreaming)) as unknown as {
        choices: Array<{text: string}>;
        speculative: SpeculativeSummary;
    };
    return {text: reply.choices[0].text, speculative: reply.speculative};
}

describe("specgate serve with token trees (family pair, continuous batching)", () => {
    it("answers concurrent tree requests, and chain ones beside them, as target-only greedy decoding does, in shared steps", async () => {
        const stepsBefore = target.batchStatistics?.steps ?? 0;
        const requests: Request[] = prompts.flatMap((prompt) => [
            {prompt, max_tokens: 40, temperature: 0, ignore_eos: true} as Request,
            {prompt, max_tokens: 40, temperature: 0, ignore_eos: true, speculative: {tree: "off"}} as Request
        ]);
        const replies = await Promise.all(requests.map((request) => complete(request)));
        expect(replies[0].speculative.tree).toBe("2x4");
        expect(replies[1].speculative.tree).toBeUndefined();
        // A tree of 8 nodes per step, of which the accepted path is kept.
        expect(replies[0].speculative.num_draft_tokens).toBeGreaterThan(2 * replies[1].speculative.num_draft_tokens! * 0.9);
        // Per-position counts are per depth: four of them, the first drafted on every step.
        const positions = replies[0].speculative.drafters!.model.draftedPerPosition;
        expect(positions).toHaveLength(4);
        expect(positions[0]).toBe(replies[0].speculative.num_drafts);
        expect(target.batchStatistics!.largestStep).toBeGreaterThan(1);
        expect(target.batchStatistics!.steps).toBeGreaterThan(stepsBefore);
        for (const [index, prompt] of prompts.entries()) {
            const reference = await generate(target, undefined, prompt, {
                gamma: 0,
                maxTokens: 40,
                ignoreEos: true,
                sampling: {temperature: 0, topK: 0, topP: 1, minP: 0}
            });
            expect(replies[2 * index].text, prompt).toBe(reference.text);
            expect(replies[2 * index + 1].text, prompt).toBe(reference.text);
        }
    });

    it("samples with a tree at T = 1 and answers within max_tokens", async () => {
        const replies = await Promise.all(prompts.map((prompt, seed) => complete({prompt, max_tokens: 24, temperature: 1, seed})));
        for (const reply of replies) expect(reply.text.length).toBeGreaterThan(0);
    });

    it("refuses a tree wider than the server's, and one for a drafter without a model, naming speculative.tree", async () => {
        for (const speculative of [{tree: "3x2"}, {tree: "2x2", drafter: "ngram"}, {tree: "2by2"}]) {
            const error = await complete({prompt: "The", max_tokens: 4, speculative} as Request).catch((caught: unknown) => caught);
            expect(error).toBeInstanceOf(OpenAI.BadRequestError);
            expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("speculative.tree");
        }
    });

    it("decodes a tree deeper than twice γ (a tree's depth is its draft length), and refuses one deeper than 16 naming the limit", async () => {
        const prompt = prompts[0];
        const deep = await complete({prompt, max_tokens: 30, temperature: 0, ignore_eos: true, speculative: {tree: "2x9"}} as Request);
        expect(deep.speculative.tree).toBe("2x9");
        expect(deep.speculative.drafters!.model.draftedPerPosition.length).toBeGreaterThan(4);
        const reference = await generate(target, undefined, prompt, {
            gamma: 0,
            maxTokens: 30,
            ignoreEos: true,
            sampling: {temperature: 0, topK: 0, topP: 1, minP: 0}
        });
        expect(deep.text).toBe(reference.text);
        const error = await complete({prompt, max_tokens: 4, speculative: {tree: "2x17"}} as Request).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(OpenAI.BadRequestError);
        const refusal = error as InstanceType<typeof OpenAI.BadRequestError>;
        expect(refusal.param).toBe("speculative.tree");
        expect(refusal.message).toContain("1..16");
        expect(refusal.message).not.toContain("maxGamma");
    });

    it("falls back to a chain for what trees cannot do when the tree is the server's default (logprobs)", async () => {
        const reply = (await client.completions.create({
            model: "family",
            prompt: "The",
            max_tokens: 8,
            temperature: 0,
            logprobs: 1
        })) as unknown as {
            choices: Array<{logprobs: {tokens: string[]}}>;
        };
        expect(reply.choices[0].logprobs.tokens.length).toBeGreaterThan(0);
    });
});
