import {describe, expect, it} from "vitest";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import {maxStopSequences} from "./commonRequestFields.js";
import {createServeApp} from "./createServeApp.js";

const target = BigramBackend.random(3, 28, {eosBias: -6});
const {app} = createServeApp({target, modelName: "bigram"});

async function refusal(body: Record<string, unknown>): Promise<{message: string; param: string | null}> {
    const response = await app.request("/v1/completions", {
        method: "POST",
        headers: {"content-type": "application/json"},
        body: JSON.stringify(body)
    });
    expect(response.status).toBe(400);
    return ((await response.json()) as {error: {message: string; param: string | null}}).error;
}

const strings = (count: number) => Array.from({length: count}, (_, index) => `s${index}`);

describe("refusals name the public field and the real limit", () => {
    it("stop: the limit of 16 sequences, however many are sent", async () => {
        expect(maxStopSequences).toBe(16);
        for (const count of [17, 1001, 10_000]) {
            const error = await refusal({prompt: "a", max_tokens: 2, stop: strings(count)});
            expect(error.param, `${count} stop strings`).toBe("stop");
            expect(error.message).toContain("at most 16 stop sequences");
            expect(error.message).not.toContain("1000");
        }
        const long = await refusal({prompt: "a", max_tokens: 2, stop: ["x".repeat(1001)]});
        expect(long).toMatchObject({param: "stop[0]", message: expect.stringContaining("at most 1000 characters") as unknown});
        expect((await refusal({prompt: "a", stop: "x".repeat(1001)})).message).toContain("at most 1000 characters");
    });

    it("prompt: token ids must be integers in [0, vocabulary size)", async () => {
        for (const [prompt, position] of [
            [[1, 2.5], "prompt[1] is 2.5"],
            [[1, -1], "prompt[1] is -1"],
            [[1, 28], "prompt[1] is 28"],
            [[3, "a"], 'prompt[1] is "a"'],
            [[[1, 2.5]], "prompt[0][1] is 2.5"],
            [[1, null], "prompt[1] is null"]
        ] as const) {
            const error = await refusal({prompt, max_tokens: 2});
            expect(error.param, JSON.stringify(prompt)).toBe("prompt");
            expect(error.message).toContain("token ids must be integers in [0, 28)");
            expect(error.message).toContain(position);
            expect(error.message).not.toContain("one prompt per request");
        }
    });

    it("prompt: a second prompt, an empty list and a list longer than the context are each said so", async () => {
        expect((await refusal({prompt: ["a", "b"]})).message).toContain("one prompt per request is supported, got a list of 2");
        expect((await refusal({prompt: [[1], [2], [3]]})).message).toContain("one prompt per request is supported, got a list of 3");
        expect((await refusal({prompt: []})).message).toContain("must not be empty");
        expect((await refusal({prompt: [[]]})).message).toContain("must not be empty");
        const tooLong = await refusal({prompt: Array.from({length: target.contextSize + 1}, () => 1.5)});
        expect(tooLong).toMatchObject({param: "prompt"});
        expect(tooLong.message).toContain(`more than this model's context of ${target.contextSize} tokens`);
        expect((await refusal({max_tokens: 2})).message).toContain("must be a string, a list of token ids");
        expect((await refusal({prompt: 7})).param).toBe("prompt");
    });

    it("still serves every form of prompt OpenAI clients send", async () => {
        for (const prompt of ["ab", ["ab"], [1, 2, 3], [[1, 2, 3]], [0, 27]]) {
            const response = await app.request("/v1/completions", {
                method: "POST",
                headers: {"content-type": "application/json"},
                body: JSON.stringify({prompt, max_tokens: 2, temperature: 0})
            });
            expect(response.status, JSON.stringify(prompt)).toBe(200);
        }
    });
});
