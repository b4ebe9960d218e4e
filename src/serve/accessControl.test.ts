import {request as httpRequest} from "node:http";
import {describe, expect, it, vi} from "vitest";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import {InvalidInputError} from "../errors.js";
import {ApiKeys, HostAllowList, isLoopbackAddress} from "./accessControl.js";
import {createServeApp, type ServeAppOptions} from "./createServeApp.js";
import {startServeServer} from "./startServeServer.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

const target = BigramBackend.random(3, 28, {eosBias: -6});
const completion = JSON.stringify({prompt: "abc", max_tokens: 2, temperature: 0});

function serve(options: Partial<ServeAppOptions> = {}) {
    return createServeApp({target, modelName: "bigram", ...options});
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function errorOf(response: Response): Promise<Record<string, any>> {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return ((await response.json()) as {error: Record<string, any>}).error;
}

describe("API keys", () => {
    const {app} = serve({apiKeys: ["key-one", "key-two"]});
    const withKey = (key: string | undefined, init: RequestInit = {}): RequestInit => ({
        ...init,
        headers: {...(key === undefined ? {} : {authorization: key}), ...(init.headers as Record<string, string>)}
    });
    const postCompletion = (authorization: string | undefined) =>
        app.request(
            "/v1/completions",
            withKey(authorization, {method: "POST", headers: {"content-type": "application/json"}, body: completion})
        );

    it("refuses a missing, malformed or wrong key with 401 in OpenAI's error format, before any work", async () => {
        for (const authorization of [
            undefined,
            "key-one",
            "Basic a2V5LW9uZQ==",
            "Bearer",
            "Bearer key-three",
            "Bearer key-one extra",
            "Bearer key-on"
        ]) {
            const response = await postCompletion(authorization);
            expect(response.status).toBe(401);
            expect(await errorOf(response)).toEqual({
                message: expect.stringMatching(/API key/) as unknown,
                type: "invalid_request_error",
                param: null,
                code: "invalid_api_key"
            });
        }
        const metrics = await (await app.request("/metrics", withKey("Bearer key-one"))).text();
        expect(metrics).not.toMatch(/^generation_tokens_total\{/m);
    });

    it("accepts each configured key on every route, and /health without one", async () => {
        expect((await postCompletion("Bearer key-one")).status).toBe(200);
        expect((await postCompletion("bearer   key-two")).status).toBe(200);
        for (const path of ["/v1/models", "/metrics", "/v1/embeddings"]) {
            expect((await app.request(path)).status).toBe(401);
        }
        expect((await app.request("/v1/models", withKey("Bearer key-two"))).status).toBe(200);
        expect((await app.request("/metrics", withKey("Bearer key-two"))).status).toBe(200);
        expect((await app.request("/v1/embeddings", withKey("Bearer key-two"))).status).toBe(404);
        expect((await app.request("/health")).status).toBe(200);
    });

    it("refuses empty keys or keys with whitespace at start-up", () => {
        expect(() => new ApiKeys([""])).toThrow(InvalidInputError);
        expect(() => new ApiKeys(["a b"])).toThrow(InvalidInputError);
        expect(new ApiKeys([]).required).toBe(false);
    });
});

describe("request bodies must be JSON", () => {
    it("refuses a text/plain or form POST (what a cross-origin page can send without a preflight) with 415, generating nothing", async () => {
        const {app} = serve();
        for (const contentType of [
            "text/plain",
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            undefined
        ]) {
            for (const path of ["/v1/completions", "/v1/chat/completions"]) {
                const response = await app.request(path, {
                    method: "POST",
                    headers: contentType === undefined ? {} : {"content-type": contentType},
                    body: completion
                });
                expect(response.status).toBe(415);
                expect((await errorOf(response)).code).toBe("unsupported_media_type");
            }
        }
        expect(await (await app.request("/metrics")).text()).not.toMatch(/^request_success_total\{/m);
        const json = await app.request("/v1/completions", {
            method: "POST",
            headers: {"content-type": "Application/JSON; charset=utf-8"},
            body: completion
        });
        expect(json.status).toBe(200);
    });
});

describe("CORS", () => {
    const preflight = (app: ReturnType<typeof serve>["app"], origin: string) =>
        app.request("/v1/completions", {
            method: "OPTIONS",
            headers: {origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type"}
        });

    it("sends no CORS headers unless origins are configured", async () => {
        const {app} = serve();
        expect((await preflight(app, "https://page.example")).headers.get("access-control-allow-origin")).toBeNull();
        const models = await app.request("/v1/models", {headers: {origin: "https://page.example"}});
        expect(models.headers.get("access-control-allow-origin")).toBeNull();
    });

    it("answers a configured origin's preflight (without an API key) and only that origin", async () => {
        const {app} = serve({corsOrigins: ["https://app.example"], apiKeys: ["k"]});
        const allowed = await preflight(app, "https://app.example");
        expect(allowed.status).toBe(204);
        expect(allowed.headers.get("access-control-allow-origin")).toBe("https://app.example");
        expect(allowed.headers.get("access-control-allow-headers")?.toLowerCase()).toContain("authorization");
        expect((await preflight(app, "https://other.example")).headers.get("access-control-allow-origin")).toBeNull();
        const models = await app.request("/v1/models", {headers: {origin: "https://app.example", authorization: "Bearer k"}});
        expect(models.status).toBe(200);
        expect(models.headers.get("access-control-allow-origin")).toBe("https://app.example");
        // Errors carry the header too, so the page can read the OpenAI error body.
        const refused = await app.request("/v1/models", {headers: {origin: "https://app.example"}});
        expect(refused.status).toBe(401);
        expect(refused.headers.get("access-control-allow-origin")).toBe("https://app.example");
    });
});

describe("Host header", () => {
    it("the loopback default allows the loopback names on the server's port only", () => {
        const hosts = HostAllowList.loopback(8000);
        for (const host of ["localhost:8000", "LOCALHOST:8000", "127.0.0.1:8000", "[::1]:8000"])
            expect(() => hosts.check(host)).not.toThrow();
        for (const host of [
            "attacker.example:8000",
            "localhost:8001",
            "localhost",
            "127.0.0.1",
            "localhost.attacker.example:8000",
            "[::1]",
            "",
            undefined
        ])
            expect(() => hosts.check(host), String(host)).toThrow(/Host header/);
    });

    it("takes names with or without a port, and * for any host; refuses a malformed entry", () => {
        const hosts = new HostAllowList(["api.example", "proxy.internal:9000"]);
        expect(() => hosts.check("api.example:443")).not.toThrow();
        expect(() => hosts.check("api.example")).not.toThrow();
        expect(() => hosts.check("proxy.internal:9000")).not.toThrow();
        expect(() => hosts.check("proxy.internal:9001")).toThrow();
        expect(() => new HostAllowList(["*"]).check("anything:1")).not.toThrow();
        expect(() => new HostAllowList(["a:b:c"])).toThrow(InvalidInputError);
        expect(isLoopbackAddress("127.0.0.1")).toBe(true);
        expect(isLoopbackAddress("::1")).toBe(true);
        expect(isLoopbackAddress("0.0.0.0")).toBe(false);
    });

    it("a server on loopback refuses a rebound name with 403 on every route, /health included", async () => {
        const server = await startServeServer({target, modelName: "bigram", port: 0});
        try {
            const get = (path: string, host: string) =>
                new Promise<{status: number; body: string}>((resolve, reject) => {
                    const request = httpRequest({host: "127.0.0.1", port: server.port, path, headers: {host}}, (response) => {
                        let body = "";
                        response.on("data", (chunk: Buffer) => (body += chunk.toString()));
                        response.on("end", () => resolve({status: response.statusCode!, body}));
                    });
                    request.on("error", reject);
                    request.end();
                });
            for (const path of ["/health", "/v1/models"]) {
                const refused = await get(path, `attacker.example:${server.port}`);
                expect(refused.status).toBe(403);
                expect((JSON.parse(refused.body) as {error: {code: string}}).error.code).toBe("host_not_allowed");
            }
            expect((await get("/health", `localhost:${server.port}`)).status).toBe(200);
            expect((await fetch(`${server.url}/v1/models`)).status).toBe(200);
        } finally {
            await server.close();
        }
    });
});
