import {describe, expect, it} from "vitest";
import {processLogits} from "../distributions/processLogits.js";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import {createServeApp} from "./createServeApp.js";
import {readSseData} from "./testing/readSseData.js";

const target = BigramBackend.random(3, 28, {eosBias: -30});
const draft = target.noisyCopy(4, 0.5);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Reply = Record<string, any>;

async function post(app: ReturnType<typeof createServeApp>["app"], path: string, body: Record<string, unknown>): Promise<Response> {
    return app.request(path, {method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify(body)});
}

describe("logprobs", () => {
    it("chat: each token's log-probability under the target, with top_logprobs alternatives, the same with and without speculation", async () => {
        const {app} = createServeApp({target, draft, modelName: "bigram"});
        const body = {messages: [{role: "user", content: "hello"}], max_tokens: 12, temperature: 0, logprobs: true, top_logprobs: 3};
        const plain = (await (await post(app, "/v1/chat/completions", {...body, speculative: "off"})).json()) as Reply;
        const speculative = (await (await post(app, "/v1/chat/completions", {...body, speculative: {gamma: 4}})).json()) as Reply;
        expect(speculative.speculative.num_draft_tokens).toBeGreaterThan(0);
        const content = plain.choices[0].logprobs.content as Reply[];
        expect(content.map((entry) => entry.token).join("")).toBe(plain.choices[0].message.content);
        expect(speculative.choices[0].logprobs).toEqual(plain.choices[0].logprobs);
        for (const entry of content) {
            expect(entry.top_logprobs).toHaveLength(3);
            // At T = 0 the emitted token is the most likely one.
            expect(entry.top_logprobs[0]).toEqual({token: entry.token, logprob: entry.logprob, bytes: entry.bytes});
            expect(entry.logprob).toBeLessThanOrEqual(0);
        }
    });

    it("completions: tokens, token_logprobs from the target's rows, top_logprobs and text_offset", async () => {
        const {app} = createServeApp({target, modelName: "bigram"});
        const reply = (await (
            await post(app, "/v1/completions", {prompt: "ab", max_tokens: 6, temperature: 1, seed: 3, logprobs: 2})
        ).json()) as Reply;
        const logprobs = reply.choices[0].logprobs;
        const text = reply.choices[0].text as string;
        expect(logprobs.tokens.join("")).toBe(text);
        const ids = [...target.tokenize("ab"), ...target.tokenize(text)];
        logprobs.token_logprobs.forEach((logprob: number, index: number) => {
            const row = processLogits(target.table[ids[index + 1]]);
            expect(logprob).toBeCloseTo(Math.log(row[ids[index + 2]]), 10);
            expect(logprobs.text_offset[index]).toBe(logprobs.tokens.slice(0, index).join("").length);
            expect(Object.keys(logprobs.top_logprobs[index]).length).toBeLessThanOrEqual(2);
        });
    });

    it("streams each step's logprobs with its chunk; together they equal the whole reply's", async () => {
        const {app} = createServeApp({target, draft, modelName: "bigram"});
        const body = {prompt: "ab", max_tokens: 10, temperature: 0, logprobs: 1, speculative: {gamma: 3}};
        const whole = (await (await post(app, "/v1/completions", body)).json()) as Reply;
        const streamed = {
            tokens: [] as string[],
            token_logprobs: [] as number[],
            top_logprobs: [] as unknown[],
            text_offset: [] as number[]
        };
        for await (const data of readSseData((await post(app, "/v1/completions", {...body, stream: true})).body!)) {
            if (data === "[DONE]") break;
            const logprobs = (JSON.parse(data) as Reply).choices[0]?.logprobs;
            if (logprobs == null) continue;
            for (const key of Object.keys(streamed) as Array<keyof typeof streamed>) (streamed[key] as unknown[]).push(...logprobs[key]);
        }
        expect(streamed).toEqual(whole.choices[0].logprobs);
    });
});
