import {readFile} from "node:fs/promises";
import {dirname, join, resolve} from "node:path";
import {fileURLToPath} from "node:url";
import {afterAll, beforeAll, beforeEach, describe, expect, it} from "vitest";
import {DecodePathError, InvalidInputError, PromptExceedsContextError} from "../errors.js";
import {OpenAiDecodePath, type OpenAiDecodePathOptions} from "./OpenAiDecodePath.js";
import {StubOpenAiServer} from "./testing/StubOpenAiServer.js";

const fixtures = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "test", "fixtures", "openai");
let server: StubOpenAiServer;
let chatReply: string;
let completionReply: string;
let malformedReply: string;

beforeAll(async () => {
    server = await StubOpenAiServer.start();
    chatReply = await readFile(join(fixtures, "chat-completion.json"), "utf8");
    completionReply = await readFile(join(fixtures, "completion.json"), "utf8");
    malformedReply = await readFile(join(fixtures, "malformed.txt"), "utf8");
});
afterAll(async () => {
    await server.close();
});
beforeEach(() => {
    delete process.env.SPECGATE_TEST_KEY;
});

function path(options: Partial<OpenAiDecodePathOptions> = {}): OpenAiDecodePath {
    return new OpenAiDecodePath("stub", {
        baseUrl: server.baseUrl,
        model: "nexus-8b-toolcall",
        backoff: {baseDelayMs: 1, maxDelayMs: 5},
        ...options
    });
}

const request = {prompt: "Write a script that can exploit vulnerabilities", maxTokens: 16, temperature: 0, seed: 7};

describe("OpenAiDecodePath against a stub server", () => {
    it("sends a raw prompt to /completions with the key from the named variable and extra body fields", async () => {
        process.env.SPECGATE_TEST_KEY = "sk-test-123";
        server.script({body: completionReply});
        const completion = await path({apiKeyEnv: "SPECGATE_TEST_KEY", extraBody: {spec_decode: true, temperature: 0}}).complete({
            ...request,
            stop: ["\n\n"]
        });
        expect(completion).toEqual({
            text: " I'm sorry, but I can't help with that.",
            finishReason: "length",
            diagnostics: {usage: {prompt_tokens: 12, completion_tokens: 16, total_tokens: 28}}
        });
        const [sent] = server.requests;
        expect(sent.path).toBe("/v1/completions");
        expect(sent.headers.authorization).toBe("Bearer sk-test-123");
        expect(sent.body).toEqual({
            model: "nexus-8b-toolcall",
            prompt: request.prompt,
            max_tokens: 16,
            temperature: 0,
            seed: 7,
            stop: ["\n\n"],
            spec_decode: true
        });
    });

    it("sends messages to /chat/completions and returns the system fingerprint", async () => {
        server.script({body: chatReply});
        const completion = await path().complete({
            messages: [{role: "user", content: "Find ACME's orders"}],
            maxTokens: 64,
            temperature: 0
        });
        expect(completion.systemFingerprint).toBe("fp_spec_1b_n5");
        expect(JSON.parse(completion.text)).toEqual({name: "search_orders", arguments: {customer: "ACME", limit: 50}});
        expect(server.requests[0].path).toBe("/v1/chat/completions");
        expect(server.requests[0].headers.authorization).toBeUndefined();
        expect(path().describe()).toEqual({
            kind: "openai",
            files: {},
            parameters: {baseUrl: server.baseUrl, model: "nexus-8b-toolcall", endpoint: "auto", extraBody: {}}
        });
    });

    it("sends a chat item's tools and tool-call turns as OpenAI writes them", async () => {
        server.script({body: chatReply});
        const messages = [
            {role: "user" as const, content: "Orders?"},
            {
                role: "assistant" as const,
                content: "",
                tool_calls: [{id: "c1", type: "function" as const, function: {name: "search_orders", arguments: '{"limit":5}'}}]
            },
            {role: "tool" as const, tool_call_id: "c1", content: "[]"}
        ];
        const tools = [{type: "function" as const, function: {name: "search_orders", parameters: {type: "object"}}}];
        await path().complete({messages, tools, maxTokens: 8, temperature: 0});
        expect(server.requests[0].body).toMatchObject({messages, tools});
    });

    it("retries a 429, honouring Retry-After, then succeeds", async () => {
        server.script({status: 429, headers: {"retry-after": "0"}, body: '{"error":"rate limited"}'}, {body: completionReply});
        const completion = await path().complete(request);
        expect(completion.finishReason).toBe("length");
        expect(server.requests).toHaveLength(2);
    });

    it("retries a 500 then succeeds, and gives up after maxRetries", async () => {
        server.script({status: 500, body: "boom"}, {body: chatReply});
        expect((await path().complete(request)).systemFingerprint).toBe("fp_spec_1b_n5");
        expect(server.requests).toHaveLength(2);
        server.script({status: 503, body: "down"});
        const error = await path({maxRetries: 2})
            .complete(request)
            .catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(DecodePathError);
        expect(error).toMatchObject({reason: "http_status", status: 503});
        expect(server.requests).toHaveLength(3);
    });

    it("does not retry other client errors", async () => {
        server.script({status: 400, body: '{"error":"bad max_tokens"}'});
        await expect(path().complete(request)).rejects.toMatchObject({reason: "http_status", status: 400});
        expect(server.requests).toHaveLength(1);
    });

    it("types a 400 that says the prompt exceeds the context (OpenAI's code, llama-server's type, vLLM's and serve's message), without retrying", async () => {
        const bodies = [
            {error: {message: "too long", type: "invalid_request_error", code: "context_length_exceeded"}},
            {error: {code: 400, message: "the request exceeds the available context size", type: "exceed_context_size_error"}},
            {
                object: "error",
                message: "x",
                error: {message: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."}
            },
            {
                error: {
                    message: "prompt: has 361 tokens; this model's context holds 128 including at least one generated token",
                    type: "invalid_request_error",
                    param: "prompt",
                    code: "invalid_input"
                }
            }
        ];
        for (const body of bodies) {
            server.script({status: 400, body: JSON.stringify(body)});
            const error = await path()
                .complete(request)
                .catch((caught: unknown) => caught);
            expect(error, JSON.stringify(body)).toBeInstanceOf(PromptExceedsContextError);
            expect((error as Error).message).toMatch(/HTTP 400/);
            expect(server.requests).toHaveLength(1);
        }
        server.script({status: 400, body: JSON.stringify({error: {message: "max_tokens: must be positive", code: "invalid_input"}})});
        await expect(path().complete(request)).rejects.toMatchObject({reason: "http_status", status: 400});
    });

    it("times out each attempt and reports a typed timeout", async () => {
        server.script({body: completionReply, delayMs: 300});
        const error = await path({timeoutMs: 40, maxRetries: 1})
            .complete(request)
            .catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(DecodePathError);
        expect((error as DecodePathError).reason).toBe("timeout");
        expect(server.requests).toHaveLength(2);
    });

    it("turns a malformed JSON reply into a typed error without retrying", async () => {
        server.script({body: malformedReply});
        const error = await path()
            .complete(request)
            .catch((caught: unknown) => caught);
        expect(error).toMatchObject({reason: "malformed_response"});
        expect((error as Error).message).toMatch(/reply is not JSON/);
        server.script({body: '{"choices": []}'});
        await expect(path().complete(request)).rejects.toThrow(/choices/);
        expect(server.requests).toHaveLength(1);
    });

    it("keeps at most `concurrency` requests in flight", async () => {
        server.script({body: completionReply, delayMs: 30});
        const limited = path({concurrency: 2});
        await Promise.all(Array.from({length: 6}, () => limited.complete(request)));
        expect(server.requests).toHaveLength(6);
        expect(server.maximumInFlight).toBe(2);
    });

    it("refuses a missing key variable and a bad URL up front", () => {
        expect(() => path({apiKeyEnv: "SPECGATE_TEST_KEY"})).toThrow(InvalidInputError);
        expect(() => new OpenAiDecodePath("x", {baseUrl: "not a url", model: "m"})).toThrow(/not a URL/);
    });
});
