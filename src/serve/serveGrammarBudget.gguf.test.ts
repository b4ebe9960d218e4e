import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {loadModelBackend} from "../backend/loadModelBackend.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {type RunningServeServer, startServeServer} from "./startServeServer.js";
import {longestEventLoopGap} from "../testing/longestEventLoopGap.js";
import {hostileSchemas} from "./testing/hostileSchemas.js";
import {postStructuredChat} from "./testing/postStructuredChat.js";

vi.setConfig(modelTestTimeouts);

const targetFile = new URL("../../models/target/model.gguf", import.meta.url).pathname;

describe("serve under hostile structured-output schemas", () => {
    let target: ModelBackend;
    let server: RunningServeServer;
    const logged: string[] = [];

    beforeAll(async () => {
        target = await loadModelBackend(targetFile, {threads: 1});
        server = await startServeServer({target, modelName: "family", port: 0, logError: (message) => logged.push(message)});
    });

    afterAll(async () => {
        await server?.close();
        await target?.dispose();
    });

    const ask = async (schema: unknown, maxTokens = 8): Promise<{status: number; body: {error?: {code: string; message: string}}}> => {
        const response = await postStructuredChat(server.url, schema, {maxTokens});
        return {status: response.status, body: (await response.json()) as {error?: {code: string; message: string}}};
    };

    for (const [name, schema] of Object.entries(hostileSchemas))
        it(`refuses ${name} with grammar_too_complex, the event loop free meanwhile`, async () => {
            const {result, gap} = await longestEventLoopGap(() => ask(schema));
            expect(result.status).toBe(400);
            expect(result.body.error?.code).toBe("grammar_too_complex");
            expect(result.body.error?.message).toMatch(/#\/.*the limit is \d+/);
            // Generous: the machine is shared; a frozen loop stalled for seconds.
            expect(gap).toBeLessThan(500);
        });

    it("answers a schema within the limits, masking off the event loop", async () => {
        const schema = {type: "object", properties: {name: {type: "string", maxLength: 5}}, required: ["name"]};
        const {result, gap} = await longestEventLoopGap(() => ask(schema, 12));
        expect(result.status).toBe(200);
        expect(gap).toBeLessThan(500);
    });

    it("ends a request whose grammar work runs over its budget with grammar_too_complex, logged with its request id", async () => {
        const strict = await startServeServer({
            target,
            modelName: "family",
            port: 0,
            grammarBudget: {computeMs: 0},
            logError: (message) => logged.push(message)
        });
        try {
            const response = await fetch(`${strict.url}/v1/chat/completions`, {
                method: "POST",
                headers: {"content-type": "application/json"},
                body: JSON.stringify({
                    messages: [{role: "user", content: "Hi"}],
                    max_tokens: 4,
                    temperature: 1,
                    response_format: {type: "json_object"}
                })
            });
            expect(response.status).toBe(400);
            const body = (await response.json()) as {error: {code: string; message: string}};
            expect(body.error.code).toBe("grammar_too_complex");
            expect(body.error.message).toMatch(/compute budget of 0 ms/);
            expect(logged.some((line) => /request \S+ refused: response_format/.test(line))).toBe(true);
        } finally {
            await strict.close();
        }
    });
});
