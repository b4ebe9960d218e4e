import fc from "fast-check";
import {describe, expect, it} from "vitest";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import {createServeApp} from "./createServeApp.js";

const target = BigramBackend.random(8, 20, {eosBias: -2, contextSize: 64});
const draft = target.noisyCopy(9, 0.5);

/** Plausible-looking values: right names with wrong, edge or nonsense values, so validation is exercised in depth. */
const anyValue = fc.oneof(
    fc.constant(null),
    fc.boolean(),
    fc.integer({min: -5, max: 100}),
    fc.double({noNaN: false}),
    fc.constantFrom(-1, 0, 1, 2, 1e308, -0, 1e-20, 5e-324),
    fc.string({maxLength: 8}),
    fc.constantFrom("off", "strict", "fuzzy:js:0.4", "calibrated", '{"kind":"lossy","tau":0.1}', "{bad"),
    fc.array(fc.oneof(fc.integer({min: -1, max: 30}), fc.string({maxLength: 3})), {maxLength: 4}),
    fc.dictionary(fc.string({maxLength: 6}), fc.oneof(fc.integer(), fc.string({maxLength: 4}), fc.constant(null)), {maxKeys: 3})
);
const fieldNames = [
    "model",
    "prompt",
    "messages",
    "stream",
    "stream_options",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "stop",
    "seed",
    "n",
    "logprobs",
    "echo",
    "speculative",
    "logit_bias",
    "user",
    "tools",
    "response_format",
    "unknown"
];
const message = fc.record(
    {
        role: fc.oneof(fc.constantFrom("system", "user", "assistant", "developer", "tool"), anyValue),
        content: fc.oneof(
            fc.string({maxLength: 10}),
            fc.array(fc.record({type: fc.constantFrom("text", "image_url"), text: fc.string({maxLength: 5})})),
            anyValue
        )
    },
    {requiredKeys: []}
);
const speculative = fc.oneof(
    anyValue,
    fc.record(
        {
            policy: fc.oneof(
                anyValue,
                fc.record(
                    {
                        kind: fc.constantFrom("fuzzy", "calibrated", "typical", "nope"),
                        threshold: anyValue,
                        memory: fc.string({maxLength: 5})
                    },
                    {requiredKeys: ["kind"]}
                )
            ),
            gamma: fc.oneof(fc.integer({min: -2, max: 70}), anyValue),
            min_confidence: anyValue,
            draft_sampling: fc.oneof(fc.constantFrom("sample", "greedy"), anyValue)
        },
        {requiredKeys: []}
    )
);
const body = fc
    .record({
        base: fc.dictionary(fc.constantFrom(...fieldNames), anyValue, {maxKeys: 6}),
        prompt: fc.option(fc.oneof(fc.string({maxLength: 20}), fc.array(fc.integer({min: -1, max: 25}), {maxLength: 5}), anyValue)),
        messages: fc.option(fc.array(message, {maxLength: 3})),
        speculative: fc.option(speculative),
        maxTokens: fc.option(fc.oneof(fc.integer({min: -1, max: 80}), anyValue))
    })
    .map(({base, prompt, messages, speculative, maxTokens}) => {
        const value: Record<string, unknown> = {...base};
        if (prompt !== null) value.prompt = prompt;
        if (messages !== null) value.messages = messages;
        if (speculative !== null) value.speculative = speculative;
        if (maxTokens !== null) value.max_tokens = maxTokens;
        return value;
    });
/** A valid body for `path` with at most one field replaced by anything: reaches the engine, and the edges of each field. */
const nearlyValid = fc
    .record({
        chat: fc.boolean(),
        text: fc.string({maxLength: 12}),
        maxTokens: fc.integer({min: 1, max: 8}),
        temperature: fc.oneof(fc.double({min: 0, max: 2, noNaN: true}), fc.constantFrom(1e-20, 1e-300, 5e-324)),
        stream: fc.boolean(),
        mutation: fc.option(fc.tuple(fc.constantFrom(...fieldNames), anyValue), {freq: 2})
    })
    .map(({chat, text, maxTokens, temperature, stream, mutation}) => {
        const value: Record<string, unknown> = chat ? {messages: [{role: "user", content: text}]} : {prompt: text};
        Object.assign(value, {max_tokens: maxTokens, temperature, stream});
        if (mutation !== null) value[mutation[0]] = mutation[1];
        return {path: chat ? "/v1/chat/completions" : "/v1/completions", text: JSON.stringify(value)};
    });
const rawBody = fc.oneof(
    body.map((value) => JSON.stringify(value)),
    fc.string({maxLength: 40}),
    fc.constantFrom("", "null", "[]", "{", '"x"', "1", '{"prompt": "a"}{}', '{"__proto__": {"n": 5}, "prompt": "a"}')
);

describe("fuzzed request bodies", () => {
    it("never produce a 5xx: every malformed body is a 4xx, every valid one a 200", async () => {
        const {app} = createServeApp({target, draft, modelName: "fuzz", maxConcurrency: 2});
        const statuses = new Map<number, number>();
        const request = fc.oneof(fc.record({path: fc.constantFrom("/v1/completions", "/v1/chat/completions"), text: rawBody}), nearlyValid);
        await fc.assert(
            fc.asyncProperty(request, async ({path, text}) => {
                const response = await app.request(path, {method: "POST", headers: {"content-type": "application/json"}, body: text});
                statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
                const reply = await response.text();
                expect(response.status, reply).toBeLessThan(500);
                // A stream that failed after its headers carries the error as an event instead.
                expect(reply).not.toContain('"server_error"');
                if (response.status !== 200) {
                    const error = (JSON.parse(reply) as {error: Record<string, unknown>}).error;
                    expect(error.type).toBe("invalid_request_error");
                    expect(typeof error.message).toBe("string");
                }
            }),
            {numRuns: 400, seed: 20260618}
        );
        // The generator must reach both outcomes, or it tests nothing about one of them.
        expect(statuses.get(200) ?? 0).toBeGreaterThan(50);
        expect(statuses.get(400) ?? 0).toBeGreaterThan(100);
    });
});
