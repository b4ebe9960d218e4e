import {mkdtemp, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import {createServeApp, type ServeAppOptions} from "./createServeApp.js";
import {RequestPermissions} from "./RequestPermissions.js";
import {DelayedBackend} from "./testing/DelayedBackend.js";
import {parsePrometheusText, sumSamples} from "./testing/parsePrometheusText.js";
import {readSseData} from "./testing/readSseData.js";

const target = BigramBackend.random(3, 28, {eosBias: -6});
const draft = target.noisyCopy(4, 0.5);

// These tests name lossy policies in requests; RequestPermissions.test.ts covers the default set.
function serve(options: Partial<ServeAppOptions> = {}) {
    return createServeApp({
        target,
        draft,
        modelName: "bigram",
        speculative: {policy: {kind: "strict"}, gamma: 3},
        requestPolicies: RequestPermissions.parsePolicies("all"),
        ...options
    });
}

function post(
    app: {request: (path: string, init: RequestInit) => Response | Promise<Response>},
    path: string,
    body: unknown
): Promise<Response> {
    return Promise.resolve(
        app.request(path, {
            method: "POST",
            headers: {"content-type": "application/json"},
            body: typeof body === "string" ? body : JSON.stringify(body)
        })
    );
}

// Replies are read field by field and their shape is what the assertions check, so they stay untyped.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Reply = Record<string, any>;

async function json(response: Response): Promise<Reply> {
    return (await response.json()) as Reply;
}

async function waitFor(condition: () => boolean, timeoutMilliseconds = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMilliseconds;
    while (!condition()) {
        if (Date.now() > deadline) throw new Error("condition not reached in time");
        await new Promise((resolve) => setTimeout(resolve, 5));
    }
}

describe("completions and chat completions", () => {
    it("answers a non-streaming completion with text, usage, fingerprint and speculative counters", async () => {
        const {app} = serve();
        const response = await post(app, "/v1/completions", {model: "bigram", prompt: "abc", max_tokens: 12, temperature: 0, seed: 1});
        expect(response.status).toBe(200);
        const body = await json(response);
        expect(body.object).toBe("text_completion");
        expect(body.id).toMatch(/^cmpl-/);
        expect(body.model).toBe("bigram");
        expect(body.system_fingerprint).toMatch(/^fp_[0-9a-f]{64}$/);
        expect(body.choices).toHaveLength(1);
        expect(["stop", "length"]).toContain(body.choices[0].finish_reason);
        expect(body.usage.prompt_tokens).toBe(4); // BOS + "abc"
        expect(body.usage.completion_tokens).toBeGreaterThan(0);
        expect(body.usage.completion_tokens).toBeLessThanOrEqual(12);
        expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + body.usage.completion_tokens);
        expect(body.choices[0].text).toBe(target.detokenize(target.tokenize(body.choices[0].text)));
        expect(body.speculative).toMatchObject({mode: "speculative", policy: "strict", gamma: 3});
        expect(body.speculative.num_draft_tokens).toBeGreaterThan(0);
    });

    it("is deterministic for a seed and equal to target-only output under greedy strict verification", async () => {
        const {app} = serve();
        const request = {prompt: "hello", max_tokens: 20, temperature: 0, seed: 5};
        const speculative = await json(await post(app, "/v1/completions", request));
        const again = await json(await post(app, "/v1/completions", request));
        const targetOnly = await json(await post(app, "/v1/completions", {...request, speculative: "off"}));
        expect(again.choices[0].text).toBe(speculative.choices[0].text);
        expect(targetOnly.choices[0].text).toBe(speculative.choices[0].text);
        expect(targetOnly.speculative).toEqual({mode: "target_only"});
        expect(targetOnly.system_fingerprint).not.toBe(speculative.system_fingerprint);
    });

    it("accepts token-id prompts and a one-element prompt list", async () => {
        const {app} = serve();
        const tokens = await json(await post(app, "/v1/completions", {prompt: [5, 6, 7], max_tokens: 3, temperature: 0}));
        expect(tokens.usage.prompt_tokens).toBe(4);
        const list = await json(await post(app, "/v1/completions", {prompt: ["abc"], max_tokens: 3, temperature: 0}));
        expect(list.usage.prompt_tokens).toBe(4);
    });

    it("streams chat chunks: a role chunk, content, a finish chunk, the usage chunk, then [DONE]", async () => {
        const {app} = serve();
        const response = await post(app, "/v1/chat/completions", {
            messages: [
                {role: "system", content: "be brief"},
                {role: "user", content: [{type: "text", text: "hi"}]}
            ],
            max_tokens: 10,
            temperature: 0,
            stream: true,
            stream_options: {include_usage: true}
        });
        expect(response.status).toBe(200);
        expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
        const events: string[] = [];
        for await (const data of readSseData(response.body!)) events.push(data);
        expect(events.at(-1)).toBe("[DONE]");
        const chunks = events.slice(0, -1).map((data) => JSON.parse(data) as Reply);
        expect(chunks[0].choices[0].delta).toEqual({role: "assistant", content: ""});
        for (const chunk of chunks) {
            expect(chunk.object).toBe("chat.completion.chunk");
            expect(chunk.system_fingerprint).toBe(chunks[0].system_fingerprint);
            expect(chunk.id).toBe(chunks[0].id);
        }
        const usageChunk = chunks.at(-1)!;
        expect(usageChunk.choices).toEqual([]);
        const finishChunk = chunks.at(-2)!;
        expect(["stop", "length"]).toContain(finishChunk.choices[0].finish_reason);
        const text = chunks
            .slice(1, -2)
            .map((chunk) => chunk.choices[0].delta.content as string)
            .join("");
        // The streamed text equals the non-streamed answer to the same request.
        const whole = await json(
            await post(app, "/v1/chat/completions", {
                messages: [
                    {role: "system", content: "be brief"},
                    {role: "user", content: "hi"}
                ],
                max_tokens: 10,
                temperature: 0
            })
        );
        expect(text).toBe(whole.choices[0].message.content);
        // The same counts, but the second request found the first's prompt in the prompt cache.
        expect(usageChunk.usage.prompt_tokens_details.cached_tokens).toBe(0);
        expect(whole.usage).toEqual({...usageChunk.usage, prompt_tokens_details: {cached_tokens: whole.usage.prompt_tokens - 1}});
        expect(whole.object).toBe("chat.completion");
        expect(whole.choices[0].message.role).toBe("assistant");
    });

    it("stops at a stop string and reports finish_reason stop", async () => {
        const {app} = serve();
        const free = await json(await post(app, "/v1/completions", {prompt: "ab", max_tokens: 30, temperature: 0, speculative: "off"}));
        const text = free.choices[0].text as string;
        expect(text.length).toBeGreaterThan(3);
        const stop = text.slice(2, 3);
        const stopped = await json(await post(app, "/v1/completions", {prompt: "ab", max_tokens: 30, temperature: 0, stop}));
        expect(stopped.choices[0].finish_reason).toBe("stop");
        expect(stopped.choices[0].text).toBe(text.slice(0, text.indexOf(stop)));
    });

    it("generates through the end-of-generation token to max_tokens with ignore_eos", async () => {
        const eosHeavy = BigramBackend.random(3, 28, {eosBias: 4});
        const app = createServeApp({target: eosHeavy, modelName: "bigram", speculative: {policy: {kind: "strict"}, gamma: 3}}).app;
        const request = {prompt: "ab", max_tokens: 64, temperature: 0.7, seed: 2};
        const ending = await json(await post(app, "/v1/completions", request));
        expect(ending.choices[0].finish_reason).toBe("stop");
        expect(ending.usage.completion_tokens).toBeLessThan(64);
        const through = await json(await post(app, "/v1/completions", {...request, ignore_eos: true}));
        expect(through.choices[0].finish_reason).toBe("length");
        expect(through.usage.completion_tokens).toBe(64);
    });

    it("lists the model and reports health", async () => {
        const {app} = serve();
        const models = await json(await app.request("/v1/models"));
        expect(models.data).toEqual([
            expect.objectContaining({id: "bigram", object: "model", max_model_len: 512, chat_template: "default"})
        ]);
        expect(await json(await app.request("/health"))).toEqual({status: "ok", running: 0, waiting: 0});
    });
});

describe("validation", () => {
    const cases: Array<[string, string, unknown, string | null]> = [
        ["n > 1", "/v1/completions", {prompt: "a", n: 2}, "n"],
        ["logprobs over 5", "/v1/completions", {prompt: "a", logprobs: 6}, "logprobs"],
        [
            "top_logprobs without logprobs",
            "/v1/chat/completions",
            {messages: [{role: "user", content: "a"}], top_logprobs: 2},
            "top_logprobs"
        ],
        [
            "top_logprobs over 20",
            "/v1/chat/completions",
            {messages: [{role: "user", content: "a"}], logprobs: true, top_logprobs: 21},
            "top_logprobs"
        ],
        ["echo", "/v1/completions", {prompt: "a", echo: true}, "echo"],
        ["negative temperature", "/v1/completions", {prompt: "a", temperature: -1}, "temperature"],
        ["top_p 0", "/v1/completions", {prompt: "a", top_p: 0}, "top_p"],
        ["fractional max_tokens", "/v1/completions", {prompt: "a", max_tokens: 1.5}, "max_tokens"],
        ["missing prompt", "/v1/completions", {max_tokens: 3}, "prompt"],
        ["two prompts", "/v1/completions", {prompt: ["a", "b"]}, "prompt"],
        ["token out of vocabulary", "/v1/completions", {prompt: [1, 999]}, "prompt"],
        ["unknown field", "/v1/completions", {prompt: "a", frobnicate: true}, "frobnicate"],
        ["empty stop string", "/v1/completions", {prompt: "a", stop: [""]}, "stop[0]"],
        ["too many stop strings", "/v1/completions", {prompt: "a", stop: Array.from({length: 17}, (_value, index) => `s${index}`)}, "stop"],
        ["bad role", "/v1/chat/completions", {messages: [{role: "robot", content: "a"}]}, "messages[0].role"],
        [
            "image part",
            "/v1/chat/completions",
            {messages: [{role: "user", content: [{type: "image_url", image_url: {url: "x"}}]}]},
            "messages[0].content[0].type"
        ],
        ["empty messages", "/v1/chat/completions", {messages: []}, "messages"],
        ["negative gamma", "/v1/completions", {prompt: "a", speculative: {gamma: -1}}, "speculative.gamma"],
        ["unknown policy", "/v1/completions", {prompt: "a", speculative: {policy: "nonsense"}}, "speculative.policy.kind"],
        [
            "policy file path",
            "/v1/completions",
            {prompt: "a", speculative: {policy: {kind: "calibrated", memory: "/etc/passwd"}}},
            "speculative.policy.memory"
        ],
        [
            "policy JSON spec with a path",
            "/v1/completions",
            {prompt: "a", speculative: {policy: '{"kind":"calibrated","memory":"x.json"}'}},
            "speculative.policy.memory"
        ],
        ["max_tokens beyond the context", "/v1/completions", {prompt: "a", max_tokens: 600}, "max_tokens"],
        ["a body that is not an object", "/v1/completions", [1, 2], null],
        ["penalties", "/v1/chat/completions", {messages: [{role: "user", content: "a"}], presence_penalty: 0.5}, "presence_penalty"]
    ];

    it.each(cases)("%s → 400 naming the field", async (_name, path, body, param) => {
        const {app} = serve();
        const response = await post(app, path, body);
        expect(response.status).toBe(400);
        const error = (await json(response)).error;
        expect(error).toMatchObject({type: "invalid_request_error", param});
        expect(typeof error.message).toBe("string");
        expect(error).toHaveProperty("code");
    });

    it("answers invalid JSON with 400, an unknown model with 404, an unknown route with 404 and a huge body with 413", async () => {
        const {app} = createServeApp({target, draft, modelName: "bigram", maxBodyBytes: 1000});
        const invalid = await post(app, "/v1/completions", '{"prompt": ');
        expect(invalid.status).toBe(400);
        expect((await json(invalid)).error.message).toMatch(/not valid JSON/);
        const unknown = await post(app, "/v1/completions", {model: "gpt-4", prompt: "a"});
        expect(unknown.status).toBe(404);
        expect((await json(unknown)).error).toMatchObject({param: "model", code: "model_not_found"});
        const route = await app.request("/v1/embeddings", {method: "POST", body: "{}"});
        expect(route.status).toBe(404);
        expect((await json(route)).error.type).toBe("invalid_request_error");
        const large = await post(app, "/v1/completions", {prompt: "a".repeat(2000)});
        expect(large.status).toBe(413);
        expect((await json(large)).error.code).toBe("payload_too_large");
    });

    it('refuses speculative settings on a server without a draft, but serves "off"', async () => {
        const {app} = createServeApp({target, modelName: "bigram"});
        const refused = await post(app, "/v1/completions", {prompt: "a", speculative: {gamma: 2}});
        expect(refused.status).toBe(400);
        expect((await json(refused)).error.param).toBe("speculative");
        const served = await json(await post(app, "/v1/completions", {prompt: "a", max_tokens: 2, speculative: "off"}));
        expect(served.speculative).toEqual({mode: "target_only"});
    });
});

describe("prompt size", () => {
    class CountingBackend extends DelayedBackend {
        public tokenizedCharacters = 0;

        public override tokenize(text: string): number[] {
            this.tokenizedCharacters += text.length;
            return super.tokenize(text);
        }
    }

    it("refuses prompt text the context cannot hold with a 400 naming the field, without tokenizing it", async () => {
        const counting = new CountingBackend(target, 0);
        const {app, state} = createServeApp({target: counting, modelName: "bigram", maxPromptBytesPerToken: 4});
        // BigramBackend's tokens are single letters: one byte each, under the cap of 4.
        expect(state.promptByteLimit).toEqual({bytes: target.contextSize, bytesPerToken: 1, capped: false});
        const tooLong = "a".repeat(target.contextSize + 1);
        const cases: Array<[string, unknown, string]> = [
            ["/v1/completions", {prompt: tooLong}, "prompt"],
            ["/v1/completions", {prompt: [tooLong]}, "prompt"],
            [
                "/v1/chat/completions",
                {
                    messages: [
                        {role: "system", content: tooLong.slice(0, 300)},
                        {role: "user", content: [{type: "text", text: tooLong.slice(300)}]}
                    ]
                },
                "messages"
            ]
        ];
        for (const [path, body, field] of cases) {
            const response = await post(app, path, body);
            expect(response.status).toBe(400);
            const error = (await json(response)).error;
            expect(error.param).toBe(field);
            expect(error.code).toBe("context_length_exceeded");
            expect(error.message).toMatch(
                new RegExp(
                    `has ${target.contextSize + 1} bytes of text; this model's context of ${target.contextSize} tokens holds at most ${target.contextSize} \\(1 bytes per token\\)`
                )
            );
        }
        expect(counting.tokenizedCharacters).toBe(0);
        // At the limit the text is tokenized and the usual context check answers (BOS + 512 tokens leave no room).
        const atLimit = await post(app, "/v1/completions", {prompt: tooLong.slice(1)});
        expect(atLimit.status).toBe(400);
        expect(counting.tokenizedCharacters).toBe(target.contextSize);
        expect((await json(atLimit)).error).toMatchObject({
            message: expect.stringMatching(/context holds/),
            code: "context_length_exceeded",
            param: "prompt"
        });
        // A prompt that fits, with more completion tokens than the rest of the context: OpenAI's refusal.
        const tooMany = await post(app, "/v1/completions", {prompt: "ab", max_tokens: target.contextSize});
        expect(tooMany.status).toBe(400);
        expect((await json(tooMany)).error).toMatchObject({
            code: "context_length_exceeded",
            param: "max_tokens",
            type: "invalid_request_error",
            message: expect.stringMatching(
                new RegExp(
                    `maximum context length is ${target.contextSize} tokens; you requested ${target.contextSize + 3} \\(3 in the prompt`
                )
            )
        });
    });

    it("caps the bytes per token, and says that token ids get past the cap", async () => {
        const {app, state} = createServeApp({target: new CountingBackend(target, 0), modelName: "bigram"});
        expect(state.promptByteLimit.bytesPerToken).toBe(1);
        // A vocabulary whose tokens stand for 40 bytes each: the cap, not the vocabulary, sets the limit.
        class LongTokens extends DelayedBackend {
            public override detokenize(tokens: readonly number[]): string {
                return "x".repeat(40 * tokens.length);
            }
        }
        const wide = createServeApp({target: new LongTokens(target, 0), modelName: "bigram", maxPromptBytesPerToken: 8});
        expect(wide.state.promptByteLimit).toEqual({bytes: target.contextSize * 8, bytesPerToken: 8, capped: true});
        const response = await post(wide.app, "/v1/completions", {prompt: "a".repeat(target.contextSize * 8 + 1)});
        expect((await json(response)).error.message).toMatch(/can be sent as token ids/);
        expect(() => createServeApp({target, modelName: "bigram", maxPromptBytesPerToken: 0})).toThrow(/maxPromptBytesPerToken/);
        expect((await post(app, "/v1/completions", {prompt: "abc", max_tokens: 1})).status).toBe(200);
    });
});

describe("system_fingerprint", () => {
    let directory: string;
    beforeAll(async () => {
        directory = await mkdtemp(join(tmpdir(), "specgate-serve-fingerprint-"));
        await writeFile(join(directory, "target.gguf"), "target bytes");
        await writeFile(join(directory, "draft-a.gguf"), "draft bytes A");
        await writeFile(join(directory, "draft-b.gguf"), "draft bytes B");
    });
    afterAll(async () => {
        await rm(directory, {recursive: true, force: true});
    });

    async function fingerprints(draftFile: string, speculative: ServeAppOptions["speculative"] = {gamma: 3}) {
        const {app} = serve({modelFiles: {target: join(directory, "target.gguf"), draft: join(directory, draftFile)}, speculative});
        const on = await json(await post(app, "/v1/completions", {prompt: "a", max_tokens: 1}));
        const off = await json(await post(app, "/v1/completions", {prompt: "a", max_tokens: 1, speculative: "off"}));
        return {on: on.system_fingerprint as string, off: off.system_fingerprint as string};
    }

    it("is stable across app instances with the same configuration", async () => {
        expect(await fingerprints("draft-a.gguf")).toEqual(await fingerprints("draft-a.gguf"));
    });

    it("changes for the speculative arm when the draft or γ changes, and not for the target-only arm", async () => {
        const base = await fingerprints("draft-a.gguf");
        const otherDraft = await fingerprints("draft-b.gguf");
        expect(otherDraft.on).not.toBe(base.on);
        expect(otherDraft.off).toBe(base.off);
        expect((await fingerprints("draft-a.gguf", {gamma: 5})).on).not.toBe(base.on);
    });

    it("differs per request when the request overrides the policy", async () => {
        const {app} = serve();
        const strict = await json(await post(app, "/v1/completions", {prompt: "a", max_tokens: 1}));
        const fuzzy = await json(await post(app, "/v1/completions", {prompt: "a", max_tokens: 1, speculative: {policy: "fuzzy:js:0.4"}}));
        expect(fuzzy.speculative.policy).toBe("fuzzy:js:0.4");
        expect(fuzzy.system_fingerprint).not.toBe(strict.system_fingerprint);
    });
});

describe("calibrated policy's correction memory", () => {
    // Every (draft, target) pair with a count far above the threshold, and a gate that passes all: every rejection is rescued.
    const everyPair = Array.from({length: target.vocabularySize ** 2}, (_value, index) => [
        Math.floor(index / target.vocabularySize),
        index % target.vocabularySize,
        1000
    ]);
    const calibrated = (extra: Record<string, unknown>) => ({kind: "calibrated", tau: 1e-300, frequencyThreshold: 6, ...extra});

    it("keeps a request's memoryEntries to that request: other clients' output and the shared memory are unchanged", async () => {
        const {app, state} = serve({requestPolicies: ["strict", "calibrated"], learnFromRequests: true});
        const request = {prompt: "hello", max_tokens: 40, temperature: 1.5, seed: 3, stop: null};
        const plain = {...request, speculative: {policy: calibrated({onlineUpdate: false})}};
        const before = await json(await post(app, "/v1/completions", plain));
        const withEntries = await json(
            await post(app, "/v1/completions", {
                ...request,
                speculative: {policy: calibrated({onlineUpdate: false, memoryEntries: everyPair})}
            })
        );
        // The entries did change that request's own decoding (rescues accept drafts strict would reject).
        expect(withEntries.speculative.num_accepted_tokens).toBeGreaterThan(before.speculative.num_accepted_tokens);
        const after = await json(await post(app, "/v1/completions", plain));
        expect(after.choices[0].text).toBe(before.choices[0].text);
        expect(after.speculative.num_accepted_tokens).toBe(before.speculative.num_accepted_tokens);
        expect(state.tenants.correctionMemory("server").size).toBe(0);
        expect(state.tenants.correctionMemory("server").version).toBe(0);
    });

    it("with --learn-from-requests takes the server's own online updates only, and reports the memory's version each request started from", async () => {
        const {app, state} = serve({requestPolicies: ["strict", "calibrated"], learnFromRequests: true});
        const memory = state.tenants.correctionMemory("server");
        const request = {prompt: "hello", max_tokens: 40, temperature: 1.5, seed: 3, stop: null};
        const first = await json(
            await post(app, "/v1/completions", {...request, speculative: {policy: calibrated({memoryEntries: everyPair})}})
        );
        expect(first.speculative.correction_memory).toEqual({learning: true, version: 0});
        // Online updates count 1 per divergence: no pair reaches the request's private count of 1000.
        expect(memory.version).toBeGreaterThan(0);
        expect(Math.max(...memory.entries().map(([, , count]) => count))).toBeLessThan(1000);
        const version = memory.version;
        const second = await json(await post(app, "/v1/completions", {...request, speculative: {policy: "calibrated"}}));
        expect(second.speculative.correction_memory).toEqual({learning: true, version});
        // The version is part of the decode path: the fingerprint moves with it.
        expect(second.system_fingerprint).not.toBe(first.system_fingerprint);
        expect((await json(await post(app, "/v1/completions", request))).speculative.correction_memory).toBeUndefined();
    });
});

describe("metrics", () => {
    it("exposes vLLM-style counters that agree with the responses", async () => {
        const {app} = serve();
        const responses: Reply[] = [];
        for (const [index, speculative] of [undefined, {policy: "fuzzy:js:0.4", gamma: 2}, "off", undefined].entries())
            responses.push(
                await json(
                    await post(app, "/v1/completions", {prompt: "abc", max_tokens: 15, seed: index, ...(speculative ? {speculative} : {})})
                )
            );
        const stream = await post(app, "/v1/chat/completions", {
            messages: [{role: "user", content: "x"}],
            max_tokens: 8,
            stream: true,
            stream_options: {include_usage: true}
        });
        const events: string[] = [];
        for await (const data of readSseData(stream.body!)) events.push(data);
        const chunks = events.slice(0, -1).map((data) => JSON.parse(data) as Reply);
        responses.push({usage: chunks.at(-1)!.usage, speculative: chunks.at(-2)!.speculative});

        const metrics = await app.request("/metrics");
        expect(metrics.headers.get("content-type")).toMatch(/^text\/plain/);
        const samples = parsePrometheusText(await metrics.text());
        const speculativeResponses = responses.filter((response) => response.speculative.mode === "speculative");
        const total = (key: string, list = speculativeResponses) =>
            list.reduce((sum, response) => sum + (response.speculative[key] as number), 0);
        expect(sumSamples(samples, "spec_decode_num_drafts_total")).toBe(total("num_drafts"));
        expect(sumSamples(samples, "spec_decode_num_draft_tokens_total")).toBe(total("num_draft_tokens"));
        expect(sumSamples(samples, "spec_decode_num_accepted_tokens_total")).toBe(total("num_accepted_tokens"));
        expect(sumSamples(samples, "spec_decode_num_accepted_tokens_per_pos_total")).toBe(total("num_accepted_tokens"));
        expect(sumSamples(samples, "spec_decode_num_accepted_tokens_per_pos_total", {position: "0"})).toBeGreaterThanOrEqual(
            sumSamples(samples, "spec_decode_num_accepted_tokens_per_pos_total", {position: "1"})
        );
        expect(total("num_draft_tokens")).toBeGreaterThan(0);

        const usage = (key: string) => responses.reduce((sum, response) => sum + (response.usage[key] as number), 0);
        expect(sumSamples(samples, "generation_tokens_total")).toBe(usage("completion_tokens"));
        expect(sumSamples(samples, "prompt_tokens_total")).toBe(usage("prompt_tokens"));
        expect(sumSamples(samples, "generation_tokens_total", {decode_mode: "target_only"})).toBe(responses[2].usage.completion_tokens);
        expect(sumSamples(samples, "request_success_total")).toBe(5);
        expect(sumSamples(samples, "e2e_request_latency_seconds_count")).toBe(5);
        expect(sumSamples(samples, "time_to_first_token_seconds_count")).toBe(5);
        expect(sumSamples(samples, "num_requests_running")).toBe(0);
    });
});

describe("concurrency", () => {
    it("decodes requests concurrently up to the limit, queues the next and answers 429 beyond the queue", async () => {
        const slow = new DelayedBackend(target, 20);
        const {app, state} = createServeApp({target: slow, modelName: "bigram", maxConcurrency: 2, maxQueue: 1});
        const body = {prompt: "a", max_tokens: 5, temperature: 0};
        const running = [post(app, "/v1/completions", body), post(app, "/v1/completions", body)];
        await waitFor(() => state.slots.running === 2);
        const queued = post(app, "/v1/completions", body);
        await waitFor(() => state.slots.waiting === 1);
        const refused = await post(app, "/v1/completions", body);
        expect(refused.status).toBe(429);
        expect(refused.headers.get("retry-after")).toBe("1");
        expect((await json(refused)).error).toMatchObject({type: "rate_limit_exceeded", code: "server_overloaded", param: null});
        const statuses = await Promise.all([...running, queued].map(async (response) => (await response).status));
        expect(statuses).toEqual([200, 200, 200]);
        // Every sequence is back in the prompt cache (none leaked past it).
        expect(state.promptCache.leased).toBe(0);
        expect(slow.openSequences).toBe(state.promptCache.size);
        const samples = parsePrometheusText(await (await app.request("/metrics")).text());
        expect(sumSamples(samples, "request_failure_total", {reason: "overloaded"})).toBe(1);
        expect(sumSamples(samples, "request_failure_total", {reason: "error"})).toBe(0);
    });

    it("interleaves concurrent generations even on a backend that never waits", async () => {
        const {app} = createServeApp({target, modelName: "bigram", maxConcurrency: 2});
        const long = post(app, "/v1/completions", {prompt: "a", max_tokens: 400, temperature: 0, stop: null});
        const short = post(app, "/v1/completions", {prompt: "a", max_tokens: 1});
        const finished: string[] = [];
        await Promise.all([long.then(() => finished.push("long")), short.then(() => finished.push("short"))]);
        expect(finished[0]).toBe("short");
    });

    it("a client disconnecting mid-stream aborts its generation and frees the slot for the next request", async () => {
        const slow = new DelayedBackend(target, 10);
        const {app, state} = createServeApp({target: slow, modelName: "bigram", maxConcurrency: 1, maxQueue: 0});
        const response = await post(app, "/v1/completions", {prompt: "a", max_tokens: 400, temperature: 0, stream: true});
        let received = 0;
        for await (const data of readSseData(response.body!)) {
            expect(data).not.toBe("[DONE]");
            if (++received === 2) break; // leaving the loop cancels the body: the client is gone
        }
        await waitFor(() => state.slots.running === 0);
        // Every sequence is back in the prompt cache (none leaked past it).
        expect(state.promptCache.leased).toBe(0);
        expect(slow.openSequences).toBe(state.promptCache.size);
        const next = await post(app, "/v1/completions", {prompt: "a", max_tokens: 2});
        expect(next.status).toBe(200);
        const samples = parsePrometheusText(await (await app.request("/metrics")).text());
        expect(sumSamples(samples, "request_failure_total", {reason: "aborted"})).toBe(1);
    });

    it("aborting a non-streaming request's signal stops its generation", async () => {
        const slow = new DelayedBackend(target, 10);
        const {app, state} = createServeApp({target: slow, modelName: "bigram", maxConcurrency: 1});
        const controller = new AbortController();
        const pending = Promise.resolve(
            app.request("/v1/completions", {
                method: "POST",
                headers: {"content-type": "application/json"},
                body: JSON.stringify({prompt: "a", max_tokens: 400, temperature: 0}),
                signal: controller.signal
            })
        );
        await waitFor(() => state.slots.running === 1);
        controller.abort();
        const response = await pending;
        expect(response.status).toBe(499);
        expect(state.slots.running).toBe(0);
        // Every sequence is back in the prompt cache (none leaked past it).
        expect(state.promptCache.leased).toBe(0);
        expect(slow.openSequences).toBe(state.promptCache.size);
    });
});

describe("graceful shutdown", () => {
    it("finishes an in-flight stream, refuses new requests with 503 and settles when drained", async () => {
        const slow = new DelayedBackend(target, 5);
        const {app, state, shutdown} = createServeApp({target: slow, modelName: "bigram"});
        const response = await post(app, "/v1/completions", {prompt: "a", max_tokens: 30, temperature: 0, stream: true, stop: null});
        const events = readSseData(response.body!);
        const first = await events.next();
        expect(first.done).toBe(false);
        let drained = false;
        const stopping = shutdown().then(() => (drained = true));
        const refused = await post(app, "/v1/completions", {prompt: "a"});
        expect(refused.status).toBe(503);
        expect((await json(refused)).error.code).toBe("shutting_down");
        expect((await app.request("/health")).status).toBe(503);
        expect((await app.request("/metrics")).status).toBe(200);
        expect(drained).toBe(false);
        const rest: string[] = [];
        for await (const data of {[Symbol.asyncIterator]: () => events}) rest.push(data);
        expect(rest.at(-1)).toBe("[DONE]");
        await stopping;
        expect(drained).toBe(true);
        expect(state.slots.running).toBe(0);
    });

    it("answers a non-streaming generation cut at the drain timeout with 503 and Retry-After", async () => {
        const slow = new DelayedBackend(target, 20);
        const {app, state, shutdown} = createServeApp({target: slow, modelName: "bigram"});
        const pending = post(app, "/v1/completions", {prompt: "a", max_tokens: 400, temperature: 0});
        await new Promise((resolve) => setTimeout(resolve, 50));
        await shutdown(50);
        const response = await pending;
        expect(response.status).toBe(503);
        expect(response.headers.get("retry-after")).toBe("5");
        expect((await json(response)).error.code).toBe("shutting_down");
        // Every sequence is back in the prompt cache (none leaked past it).
        expect(state.promptCache.leased).toBe(0);
        expect(slow.openSequences).toBe(state.promptCache.size);
    });

    it("refuses queued requests with 503 and Retry-After when the drain starts", async () => {
        const slow = new DelayedBackend(target, 10);
        const {app, state, shutdown} = createServeApp({target: slow, modelName: "bigram", maxConcurrency: 1, maxQueue: 4});
        const running = post(app, "/v1/completions", {prompt: "a", max_tokens: 10, temperature: 0});
        await waitFor(() => state.slots.running === 1);
        const queued = [
            post(app, "/v1/completions", {prompt: "a"}),
            post(app, "/v1/chat/completions", {messages: [{role: "user", content: "a"}], stream: true})
        ];
        await waitFor(() => state.slots.waiting === 2);
        const stopping = shutdown();
        for (const response of await Promise.all(queued)) {
            expect(response.status).toBe(503);
            expect(response.headers.get("retry-after")).toBe("5");
            expect((await json(response)).error).toMatchObject({type: "server_error", code: "shutting_down"});
        }
        expect((await running).status).toBe(200);
        await stopping;
        const samples = parsePrometheusText(await (await app.request("/metrics")).text());
        expect(sumSamples(samples, "request_failure_total", {reason: "shutdown"})).toBe(2);
        expect(sumSamples(samples, "request_failure_total", {reason: "aborted"})).toBe(0);
    });

    it("ends a stream cut at the drain timeout with a finish_reason, an error event and [DONE]", async () => {
        const slow = new DelayedBackend(target, 10);
        const {app, state, shutdown} = createServeApp({target: slow, modelName: "bigram"});
        const response = await post(app, "/v1/chat/completions", {
            messages: [{role: "user", content: "a"}],
            max_tokens: 400,
            temperature: 0,
            stream: true,
            stop: null
        });
        expect(response.status).toBe(200);
        const events: string[] = [];
        const reading = (async () => {
            for await (const data of readSseData(response.body!)) events.push(data);
        })();
        await waitFor(() => events.length >= 3);
        await shutdown(30);
        await reading;
        expect(events.at(-1)).toBe("[DONE]");
        const [finish, error] = events.slice(-3, -1).map((data) => JSON.parse(data) as Reply);
        expect(finish.choices[0].finish_reason).toBe("abort");
        expect(error.error).toMatchObject({type: "server_error", code: "shutting_down"});
        expect(state.slots.running).toBe(0);
        // Every sequence is back in the prompt cache (none leaked past it).
        expect(state.promptCache.leased).toBe(0);
        expect(slow.openSequences).toBe(state.promptCache.size);
        const samples = parsePrometheusText(await (await app.request("/metrics")).text());
        expect(sumSamples(samples, "request_failure_total", {reason: "shutdown"})).toBe(1);
    });
});
