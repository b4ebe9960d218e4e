import {request as httpRequest} from "node:http";
import {describe, expect, it, vi} from "vitest";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import {HostAllowList} from "./accessControl.js";
import {createServeApp, type ServeAppOptions} from "./createServeApp.js";
import {ggufChatTemplate} from "../chat/ggufChatTemplate.js";
import {maxBodyDepth} from "./parseRequestBody.js";
import {startServeServer} from "./startServeServer.js";
import {DelayedBackend} from "./testing/DelayedBackend.js";
import {parsePrometheusText, sumSamples} from "./testing/parsePrometheusText.js";
import {readSseData} from "./testing/readSseData.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

const target = BigramBackend.random(3, 28, {eosBias: -30, contextSize: 256});

// Replies are read field by field; their shape is what the assertions check.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Reply = Record<string, any>;

function serve(options: Partial<ServeAppOptions> = {}) {
    return createServeApp({target, modelName: "bigram", ...options});
}

function post(app: ReturnType<typeof serve>["app"], path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
    return Promise.resolve(
        app.request(path, {
            method: "POST",
            headers: {"content-type": "application/json", ...headers},
            body: typeof body === "string" ? body : JSON.stringify(body)
        })
    );
}

async function metrics(app: ReturnType<typeof serve>["app"]) {
    return parsePrometheusText(await (await app.request("/metrics")).text());
}

/** The JSON text of a schema nested `depth` objects deep, as a client could send in tools[].function.parameters (built as text: JSON.stringify would overflow here too). */
function nestedSchema(depth: number): string {
    return `${'{"type":"object","properties":{"inner":'.repeat(depth)}{"type":"string"}${"}}".repeat(depth)}`;
}

describe("bodies the schema accepts never get a 5xx", () => {
    it("samples tiny temperatures greedily", async () => {
        const {app} = serve();
        const greedy = (await (
            await post(app, "/v1/completions", {prompt: "ab", max_tokens: 12, temperature: 0, seed: 1})
        ).json()) as Reply;
        for (const temperature of [1e-20, 1e-300, 5e-324, 9e-7]) {
            const response = await post(app, "/v1/completions", {prompt: "ab", max_tokens: 12, temperature, seed: 1});
            expect(response.status, String(temperature)).toBe(200);
            expect(((await response.json()) as Reply).choices[0].text).toBe(greedy.choices[0].text);
        }
    });

    it("refuses tool schemas nested deeper than the limit with a 400 naming where", async () => {
        // A template that writes the tools out as JSON, as real ones do (JSON.stringify overflowed the stack at 10^4 levels).
        const templated = Object.assign(Object.create(target) as BigramBackend, {
            tokenizeWithSpecialTokens: (text: string) => target.tokenize(text)
        });
        const chatTemplate = ggufChatTemplate(
            templated,
            "{% if tools %}{{ tools | tojson }}{% endif %}{% for message in messages %}{{ message['content'] }}{% endfor %}"
        );
        const {app} = serve({target: templated, chatTemplate});
        const chat = (depth: number) =>
            post(
                app,
                "/v1/chat/completions",
                `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"tools":[{"type":"function","function":{"name":"f","parameters":${nestedSchema(depth)}}}]}`
            );
        const shallow = await chat(2);
        expect(shallow.status, await shallow.clone().text()).toBe(200);
        for (const depth of [maxBodyDepth, 10_000]) {
            const response = await chat(depth);
            expect(response.status, String(depth)).toBe(400);
            const error = ((await response.json()) as Reply).error;
            expect(error.param).toMatch(/^tools\[0\]\.function\.parameters\.properties\.inner/);
            expect(error.message).toContain(`nested more than ${maxBodyDepth} levels deep`);
        }
    });

    it("refuses a token-id prompt longer than the context by its length", async () => {
        const {app} = serve();
        for (const prompt of [new Array<number>(257).fill(5), [new Array<number>(100_000).fill(5)]]) {
            const response = await post(app, "/v1/completions", {prompt, max_tokens: 1});
            expect(response.status).toBe(400);
            const error = ((await response.json()) as Reply).error;
            expect(error).toMatchObject({param: "prompt"});
            expect(error.message).toContain("context of 256 tokens");
        }
    });

    it("logs an unexpected error with its stack and the request id that its reply carries", async () => {
        const broken = Object.create(target, {
            tokenize: {
                value: () => {
                    throw new Error("tokenizer exploded");
                }
            }
        }) as BigramBackend;
        const logged: string[] = [];
        const {app} = createServeApp({target: broken, modelName: "bigram", logError: (message) => logged.push(message)});
        const response = await post(app, "/v1/completions", {prompt: "ab", max_tokens: 2});
        expect(response.status).toBe(500);
        const requestId = response.headers.get("x-request-id");
        expect(requestId).toMatch(/^req_[0-9a-f]{32}$/);
        const error = ((await response.json()) as Reply).error;
        expect(error.message).toBe(`internal server error (request ${requestId})`);
        expect(logged).toHaveLength(1);
        expect(logged[0]).toContain(requestId);
        expect(logged[0]).toContain("Error: tokenizer exploded");
        expect(logged[0]).toMatch(/\n\s+at /);
        // Every reply has an id, a success too, and no two are the same.
        const ok = await post(serve().app, "/v1/completions", {prompt: "ab", max_tokens: 2});
        expect(ok.headers.get("x-request-id")).toMatch(/^req_/);
        expect(ok.headers.get("x-request-id")).not.toBe(requestId);
    });
    it("ends a stream whose engine fails mid-way with an error event carrying the request id, and logs the stack", async () => {
        // The third evaluation of every sequence throws, after the first tokens were streamed.
        const failing = Object.create(target, {
            createSequence: {
                value: async () => {
                    const sequence = await target.createSequence();
                    let calls = 0;
                    const fail = <T>(call: () => Promise<T>): Promise<T> =>
                        ++calls === 3 ? Promise.reject(new Error("device lost")) : call();
                    return Object.assign(Object.create(sequence) as object, {
                        evaluate: (...args: Parameters<typeof sequence.evaluate>) => fail(() => sequence.evaluate(...args)),
                        evaluateArgmax: (...args: Parameters<NonNullable<typeof sequence.evaluateArgmax>>) =>
                            fail(() => sequence.evaluateArgmax!(...args))
                    });
                }
            }
        }) as BigramBackend;
        const logged: string[] = [];
        const {app} = createServeApp({target: failing, modelName: "bigram", logError: (message) => logged.push(message)});
        const response = await post(app, "/v1/completions", {prompt: "ab", max_tokens: 20, temperature: 0, stream: true});
        expect(response.status).toBe(200);
        const requestId = response.headers.get("x-request-id")!;
        const events: string[] = [];
        for await (const data of readSseData(response.body!)) events.push(data);
        expect(events.at(-1)).toBe("[DONE]");
        const error = (JSON.parse(events.at(-2)!) as Reply).error;
        expect(error).toMatchObject({type: "server_error", message: `internal server error (request ${requestId})`});
        expect(logged).toHaveLength(1);
        expect(logged[0]).toContain(requestId);
        expect(logged[0]).toContain("Error: device lost");
    });
});

describe("metrics of requests that do not complete", () => {
    it("counts requests refused before generation by status", async () => {
        const {app} = createServeApp({
            target: new DelayedBackend(target, 30),
            modelName: "bigram",
            apiKeys: ["k"],
            maxBodyBytes: 2000,
            maxConcurrency: 1,
            maxQueue: 0,
            allowedHosts: new HostAllowList(["localhost"])
        });
        const key = {authorization: "Bearer k", host: "localhost"};
        const local = "http://localhost/v1/completions";
        expect((await post(app, local, {prompt: 5}, key)).status).toBe(400);
        expect((await post(app, local, {prompt: "ab"}, {host: "localhost"})).status).toBe(401);
        expect((await post(app, "http://evil.example/v1/completions", {prompt: "ab"}, {...key, host: "evil.example"})).status).toBe(403);
        expect((await post(app, local, {prompt: "ab".repeat(2000)}, key)).status).toBe(413);
        const running = post(app, local, {prompt: "ab", max_tokens: 3}, key);
        await new Promise((resolve) => setTimeout(resolve, 5));
        expect((await post(app, local, {prompt: "ab", max_tokens: 3}, key)).status).toBe(429);
        expect((await running).status).toBe(200);
        const samples = parsePrometheusText(await (await app.request("http://localhost/metrics", {headers: key})).text());
        for (const status of ["400", "401", "403", "413", "429"])
            expect(sumSamples(samples, "request_refused_total", {status}), status).toBe(1);
        expect(sumSamples(samples, "request_refused_total")).toBe(5);
    });

    it("counts the tokens a stream generated before its client left", async () => {
        const slow = new DelayedBackend(target, 5);
        const {app, state} = serve({target: slow, maxConcurrency: 1});
        const response = await post(app, "/v1/completions", {prompt: "a", max_tokens: 200, temperature: 0, stream: true});
        let received = 0;
        for await (const data of readSseData(response.body!)) {
            expect(data).not.toBe("[DONE]");
            if (++received === 4) break;
        }
        while (state.slots.running > 0) await new Promise((resolve) => setTimeout(resolve, 5));
        const samples = await metrics(app);
        expect(sumSamples(samples, "request_failure_total", {reason: "aborted"})).toBe(1);
        expect(sumSamples(samples, "generation_tokens_total", {decode_mode: "target_only"})).toBeGreaterThanOrEqual(4);
        expect(sumSamples(samples, "prompt_tokens_total", {decode_mode: "target_only"})).toBe(2);
    });
});

describe("a body over the limit", () => {
    /** Sends `body` (or `size` bytes) over a real socket, with Content-Length or chunked, and returns what the client read. */
    function send(url: string, size: number | Buffer, chunked: boolean): Promise<{status?: number; body?: string; error?: string}> {
        const body = typeof size === "number" ? Buffer.alloc(size, 0x61) : size;
        size = body.length;
        return new Promise((resolve) => {
            const request = httpRequest(
                `${url}/v1/completions`,
                {
                    method: "POST",
                    headers: {"content-type": "application/json", ...(chunked ? {} : {"content-length": String(size)})}
                },
                (response) => {
                    let text = "";
                    response.on("data", (data: Buffer) => (text += data.toString()));
                    response.on("end", () => resolve({status: response.statusCode, body: text}));
                }
            );
            request.on("error", (error) => resolve({error: error.message}));
            if (chunked) for (let offset = 0; offset < size; offset += 64 * 1024) request.write(body.subarray(offset, offset + 64 * 1024));
            request.end(chunked ? undefined : body);
        });
    }

    it("leaves a body within it whole, declared or chunked, in one piece or in many", async () => {
        const server = await startServeServer({target, modelName: "bigram", port: 0, maxBodyBytes: 256 * 1024});
        try {
            // White space inside the JSON spreads it over three of the chunked sends' 64 KiB pieces, under the limit.
            const body = Buffer.from(`{"prompt": "a",${" ".repeat(160 * 1024)}"max_tokens": 1, "temperature": 0}`);
            for (const chunked of [false, true]) {
                const reply = await send(server.url, body, chunked);
                expect(reply.status, `chunked ${chunked}: ${reply.body}`).toBe(200);
                expect(JSON.parse(reply.body!)).toMatchObject({object: "text_completion", usage: {completion_tokens: 1}});
            }
        } finally {
            await server.close();
        }
    });

    it("is read on and answered 413 with an OpenAI error body, whether its length was declared or not", async () => {
        const server = await startServeServer({target, modelName: "bigram", port: 0, maxBodyBytes: 64 * 1024});
        try {
            for (const chunked of [false, true]) {
                const reply = await send(server.url, 10 * 1024 * 1024, chunked);
                expect(reply.error, `chunked ${chunked}`).toBeUndefined();
                expect(reply.status).toBe(413);
                expect(JSON.parse(reply.body!)).toMatchObject({error: {type: "invalid_request_error", code: "payload_too_large"}});
            }
        } finally {
            await server.close();
        }
    });
});
