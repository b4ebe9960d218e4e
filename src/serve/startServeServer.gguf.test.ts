import {mkdir, mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import OpenAI from "openai";
import type {ChatCompletionCreateParamsStreaming, CompletionCreateParamsNonStreaming} from "openai/resources";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {NodeLlamaCppBackend} from "../backend/NodeLlamaCppBackend.js";
import {writeRandomLlamaPair} from "../gguf/randomLlamaModel.js";
import {type RunningServeServer, type ServeServerOptions, startServeServer} from "./startServeServer.js";
import {parsePrometheusText, sumSamples} from "./testing/parsePrometheusText.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/**
 * The server on a real port with real GGUF models (random-weight fixtures, llama.cpp on CPU),
 * driven by the official `openai` client, as an eval harness or canary would drive it.
 */
let directory: string;
let target: NodeLlamaCppBackend;
let draft: NodeLlamaCppBackend;
let otherDraft: NodeLlamaCppBackend;
let files: {target: string; draft: string; otherTarget: string; otherDraft: string};

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-serve-"));
    await mkdir(join(directory, "other"));
    const pair = await writeRandomLlamaPair({directory, seed: 11});
    // Same seed, different draft noise: a byte-identical target with a different draft.
    const other = await writeRandomLlamaPair({directory: join(directory, "other"), seed: 11, draftNoise: 0.35});
    files = {target: pair.targetPath, draft: pair.draftPath, otherTarget: other.targetPath, otherDraft: other.draftPath};
    target = await NodeLlamaCppBackend.load(pair.targetPath, {threads: 1});
    draft = await NodeLlamaCppBackend.load(pair.draftPath, {threads: 1});
    otherDraft = await NodeLlamaCppBackend.load(other.draftPath, {threads: 1});
});

afterAll(async () => {
    await otherDraft?.dispose();
    await draft?.dispose();
    await target?.dispose();
    await rm(directory, {recursive: true, force: true});
});

function start(options: Partial<ServeServerOptions> = {}): Promise<RunningServeServer> {
    return startServeServer({
        target,
        draft,
        modelName: "tiny",
        modelFiles: {target: files.target, draft: files.draft},
        speculative: {policy: {kind: "strict"}, gamma: 4},
        requestPolicies: ["strict", "fuzzy"],
        port: 0,
        ...options
    });
}

function client(server: RunningServeServer): OpenAI {
    return new OpenAI({baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0});
}

async function waitFor(condition: () => boolean): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!condition()) {
        if (Date.now() > deadline) throw new Error("condition not reached in time");
        await new Promise((resolve) => setTimeout(resolve, 10));
    }
}

describe("specgate serve with the openai client", () => {
    it("serves completions and chat completions, streamed and not, and metrics that agree with them", async () => {
        const server = await start();
        try {
            const openai = client(server);
            const completion = await openai.completions.create({
                model: "tiny",
                prompt: "Once upon a time",
                max_tokens: 24,
                temperature: 0,
                seed: 3
            });
            expect(completion.system_fingerprint).toMatch(/^fp_[0-9a-f]{64}$/);
            expect(completion.choices[0].text.length).toBeGreaterThan(0);
            expect(completion.usage?.completion_tokens).toBeGreaterThan(0);

            // Greedy strict speculative decoding through the server equals target-only through the server
            // here (fixture logit gaps are far above float noise, see generate.gguf.test.ts).
            const targetOnly = await openai.completions.create({
                model: "tiny",
                prompt: "Once upon a time",
                max_tokens: 24,
                temperature: 0,
                seed: 3,
                speculative: "off"
            } as CompletionCreateParamsNonStreaming);
            expect(targetOnly.choices[0].text).toBe(completion.choices[0].text);
            expect(targetOnly.system_fingerprint).not.toBe(completion.system_fingerprint);

            const stream = await openai.completions.create({
                model: "tiny",
                prompt: "Once upon a time",
                max_tokens: 24,
                temperature: 0,
                seed: 3,
                stream: true
            });
            let streamed = "";
            for await (const chunk of stream) {
                expect(chunk.system_fingerprint).toBe(completion.system_fingerprint);
                streamed += chunk.choices[0]?.text ?? "";
            }
            expect(streamed).toBe(completion.choices[0].text);

            const chat = await openai.chat.completions.create({
                model: "tiny",
                messages: [{role: "user", content: "Hello"}],
                max_tokens: 16,
                temperature: 0
            });
            expect(chat.choices[0].message.role).toBe("assistant");
            expect(chat.system_fingerprint).toBe(completion.system_fingerprint);
            const chatStream = await openai.chat.completions.create({
                model: "tiny",
                messages: [{role: "user", content: "Hello"}],
                max_tokens: 16,
                temperature: 0,
                stream: true,
                stream_options: {include_usage: true},
                speculative: {policy: "fuzzy:js:0.4", gamma: 3}
            } as ChatCompletionCreateParamsStreaming);
            let chatText = "";
            let usage: OpenAI.CompletionUsage | null | undefined;
            for await (const chunk of chatStream) {
                chatText += chunk.choices[0]?.delta.content ?? "";
                usage ??= chunk.usage;
            }
            expect(usage?.completion_tokens).toBeGreaterThan(0);
            expect(chatText.length).toBeGreaterThan(0);

            const models = await openai.models.list();
            expect(models.data.map((model) => model.id)).toEqual(["tiny"]);
            await expect(openai.completions.create({model: "other", prompt: "x"})).rejects.toMatchObject({status: 404});
            await expect(openai.completions.create({model: "tiny", prompt: "x", n: 2})).rejects.toMatchObject({status: 400, param: "n"});

            const samples = parsePrometheusText(await (await fetch(`${server.url}/metrics`)).text());
            const completionTokens =
                [completion, targetOnly, chat].reduce((sum, reply) => sum + (reply.usage?.completion_tokens ?? 0), 0) +
                completion.usage!.completion_tokens +
                usage!.completion_tokens;
            expect(sumSamples(samples, "generation_tokens_total")).toBe(completionTokens);
            expect(sumSamples(samples, "request_success_total")).toBe(5);
            expect(sumSamples(samples, "spec_decode_num_draft_tokens_total")).toBeGreaterThan(0);
            expect(sumSamples(samples, "spec_decode_num_accepted_tokens_total")).toBe(
                sumSamples(samples, "spec_decode_num_accepted_tokens_per_pos_total")
            );
        } finally {
            await server.close();
        }
    });

    it("keeps system_fingerprint across restarts with the same configuration and changes it with the draft", async () => {
        const fingerprints = async (options: Partial<ServeServerOptions>) => {
            const server = await start(options);
            try {
                const openai = client(server);
                const on = await openai.completions.create({model: "tiny", prompt: "a", max_tokens: 1});
                const off = await openai.completions.create({
                    model: "tiny",
                    prompt: "a",
                    max_tokens: 1,
                    speculative: "off"
                } as CompletionCreateParamsNonStreaming);
                return {on: on.system_fingerprint, off: off.system_fingerprint};
            } finally {
                await server.close();
            }
        };
        const first = await fingerprints({});
        expect(await fingerprints({})).toEqual(first);
        const swapped = await fingerprints({draft: otherDraft, modelFiles: {target: files.otherTarget, draft: files.otherDraft}});
        expect(swapped.on).not.toBe(first.on);
        expect(swapped.off).toBe(first.off);
    });

    it("frees the slot when a client disconnects mid-stream, so the next request is served", async () => {
        const server = await start({maxConcurrency: 1, maxQueue: 0});
        try {
            const openai = client(server);
            const stream = await openai.completions.create({model: "tiny", prompt: "Once", max_tokens: 200, temperature: 0, stream: true});
            let chunks = 0;
            for await (const _chunk of stream) if (++chunks === 2) break; // breaking aborts the HTTP request
            const state = server.serveApp.state;
            await waitFor(() => state.slots.running === 0);
            const next = await openai.completions.create({model: "tiny", prompt: "Once", max_tokens: 4});
            expect(next.choices[0].finish_reason).toBeDefined();
            const samples = parsePrometheusText(await (await fetch(`${server.url}/metrics`)).text());
            expect(sumSamples(samples, "request_failure_total", {reason: "aborted"})).toBe(1);
        } finally {
            await server.close();
        }
    });

    it("drains an in-flight stream on shutdown while refusing new requests", async () => {
        const server = await start();
        const openai = client(server);
        const stream = await openai.chat.completions.create({
            model: "tiny",
            messages: [{role: "user", content: "Hi"}],
            max_tokens: 200,
            temperature: 0,
            stream: true
        });
        const iterator = stream[Symbol.asyncIterator]();
        await iterator.next();
        const closing = server.close();
        const refused = await fetch(`${server.url}/v1/completions`, {method: "POST", body: JSON.stringify({prompt: "x"})});
        expect(refused.status).toBe(503);
        let finishReason: string | null | undefined;
        for (let next = await iterator.next(); next.done !== true; next = await iterator.next())
            finishReason = next.value.choices[0]?.finish_reason ?? finishReason;
        expect(["stop", "length"]).toContain(finishReason);
        await closing;
        await expect(fetch(`${server.url}/health`)).rejects.toThrow();
    });
});
