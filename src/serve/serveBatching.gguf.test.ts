import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import OpenAI from "openai";
import type {CompletionCreateParamsStreaming} from "openai/resources";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {NativeBackend} from "../backend/NativeBackend.js";
import {greedyMargin} from "../backend/testing/greedyMargin.js";
import {generate} from "../engine/generate.js";
import {writeRandomLlamaPair} from "../gguf/randomLlamaModel.js";
import {type RunningServeServer, startServeServer} from "./startServeServer.js";
import {parsePrometheusText, sumSamples} from "./testing/parsePrometheusText.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/**
 * Continuous batching behind the HTTP API: concurrent requests with different decode paths (strict
 * with the draft model, target-only, an n-gram drafter) share the target's steps, and each answer
 * at temperature 0 is the one a server without batching gives.
 */
let directory: string;
let files: {target: string; draft: string};
const backends: NativeBackend[] = [];

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-serve-batching-"));
    const pair = await writeRandomLlamaPair({directory, seed: 29});
    files = {target: pair.targetPath, draft: pair.draftPath};
});

afterAll(async () => {
    for (const backend of backends) await backend.dispose();
    await rm(directory, {recursive: true, force: true});
});

async function serve(batchedSequences: number): Promise<{server: RunningServeServer; target: NativeBackend}> {
    const target = await NativeBackend.load(files.target, {contextSize: 512, batchedSequences, inlineBelowMilliseconds: 1});
    const draft = await NativeBackend.load(files.draft, {contextSize: 512, batchedSequences, inlineBelowMilliseconds: 1});
    backends.push(target, draft);
    const server = await startServeServer({
        target,
        draft,
        modelName: "tiny",
        modelFiles: files,
        speculative: {policy: {kind: "strict"}, gamma: 4},
        port: 0,
        maxConcurrency: 4,
        maxQueue: 16
    });
    return {server, target};
}

const requests: Array<Omit<CompletionCreateParamsStreaming, "model" | "stream"> & {speculative?: unknown}> = [
    {prompt: "Once upon a time", max_tokens: 40, temperature: 0},
    {prompt: "東京は", max_tokens: 40, temperature: 0, speculative: "off"},
    {prompt: "def f(x): return f(x) + f(x) + f(x)", max_tokens: 40, temperature: 0, speculative: {drafter: "ngram"}},
    {prompt: "The answer is", max_tokens: 40, temperature: 0},
    {prompt: "Hello, world", max_tokens: 40, temperature: 0, speculative: "off"},
    {prompt: "abc abc abc", max_tokens: 40, temperature: 0, speculative: {drafter: "ngram"}},
    {prompt: "Once upon a time", max_tokens: 40, temperature: 0.8, seed: 5},
    {prompt: "In the beginning", max_tokens: 40, temperature: 0}
];

async function streamText(openai: OpenAI, request: (typeof requests)[number]): Promise<string> {
    const stream = await openai.completions.create({model: "tiny", stream: true, ...request} as CompletionCreateParamsStreaming);
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? "";
    return text;
}

describe("specgate serve with continuous batching", () => {
    it("answers concurrent requests of every decode path as a server without batching does, in shared steps", async () => {
        const batched = await serve(4);
        const alone = await serve(1);
        try {
            const batchedClient = new OpenAI({baseURL: `${batched.server.url}/v1`, apiKey: "unused", maxRetries: 0});
            const aloneClient = new OpenAI({baseURL: `${alone.server.url}/v1`, apiKey: "unused", maxRetries: 0});
            const together = await Promise.all(requests.map((request) => streamText(batchedClient, request)));
            const statistics = batched.target.batchStatistics!;
            // Four requests at a time share the target's steps.
            expect(statistics.largestStep).toBe(4);
            expect(statistics.submissions / statistics.steps).toBeGreaterThan(2);
            expect(alone.target.batchStatistics).toBeUndefined();
            const metrics = parsePrometheusText(await (await fetch(`${batched.server.url}/metrics`)).text());
            expect(sumSamples(metrics, "batch_steps_total", {model: "target"})).toBe(statistics.steps);
            expect(sumSamples(metrics, "batch_evaluations_total", {model: "target"})).toBe(statistics.submissions);
            expect(sumSamples(metrics, "batch_steps_total", {model: "draft"})).toBeGreaterThan(0);
            expect(sumSamples(metrics, "batch_decode_seconds_total", {model: "target"})).toBeGreaterThan(0);
            let differing = 0;
            for (const [index, request] of requests.entries()) {
                expect(together[index].length).toBeGreaterThan(0);
                if (request.temperature !== 0) continue;
                const expected = await streamText(aloneClient, request);
                if (together[index] === expected) continue;
                // Batched rows differ from lone ones in the last bits: a different text is allowed only
                // where the greedy path passes a near-tie (see greedyMargin).
                const reference = await generate(alone.target, undefined, request.prompt as string, {
                    sampling: {temperature: 0},
                    maxTokens: 40
                });
                expect(await greedyMargin(alone.target, request.prompt as string, reference.tokens)).toBeLessThanOrEqual(2);
                differing++;
            }
            expect(differing).toBeLessThanOrEqual(1);
        } finally {
            await batched.server.close();
            await alone.server.close();
        }
    });

    it("keeps serving the others when a client leaves mid-stream, and frees its sequence", async () => {
        const {server, target} = await serve(4);
        try {
            const openai = new OpenAI({baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0});
            const leaving = new AbortController();
            const abandoned = (async () => {
                const stream = await openai.completions.create(
                    {model: "tiny", stream: true, prompt: "a client that leaves", max_tokens: 200, temperature: 0},
                    {signal: leaving.signal}
                );
                let chunks = 0;
                try {
                    for await (const _chunk of stream) if (++chunks === 3) leaving.abort();
                } catch {
                    // The client's own abort, as the openai client reports it.
                }
                return chunks;
            })();
            const staying = requests.slice(0, 3).map((request) => streamText(openai, request));
            expect(await abandoned).toBeLessThan(10);
            const texts = await Promise.all(staying);
            texts.forEach((text) => expect(text.length).toBeGreaterThan(0));
            await expect.poll(() => server.serveApp.state.slots.running).toBe(0);
            // All four shared sequence ids are free again: four new requests still share one step.
            const before = {...target.batchStatistics!};
            await Promise.all(requests.slice(0, 4).map((request) => streamText(openai, request)));
            const after = target.batchStatistics!;
            expect(after.submissions - before.submissions).toBeGreaterThan(2 * (after.steps - before.steps));
        } finally {
            await server.close();
        }
    });

    it("drains: batched streams cut at the drain timeout end with finish_reason abort, queued requests get 503", async () => {
        const {server, target} = await serve(4);
        const body = (prompt: string) => JSON.stringify({prompt, max_tokens: 400, temperature: 0, stream: true, ignore_eos: true});
        const post = (prompt: string) =>
            fetch(`${server.url}/v1/completions`, {method: "POST", headers: {"content-type": "application/json"}, body: body(prompt)});
        const running = await Promise.all(["one", "two", "three", "four"].map(post));
        const queued = post("five");
        await expect.poll(() => server.serveApp.state.slots.waiting).toBe(1);
        const closing = server.close(100);
        expect((await queued).status).toBe(503);
        for (const response of running) {
            const text = await response.text();
            expect(text).toContain('"finish_reason":"abort"');
            expect(text).toContain('"code":"shutting_down"');
            expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
        }
        await closing;
        // Every shared sequence was given back: the scheduler decodes nothing more and the model unloads.
        expect(server.serveApp.state.slots.running).toBe(0);
        await target.dispose();
    });
});
