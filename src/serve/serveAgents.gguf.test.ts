import OpenAI from "openai";
import {zodResponseFormat} from "openai/helpers/zod";
import type {ChatCompletionCreateParamsNonStreaming} from "openai/resources";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {z} from "zod";
import {loadModelBackend} from "../backend/loadModelBackend.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {withBos} from "../backend/addsBos.js";
import {constraintFor} from "../constraints/constraintFor.js";
import {grammarForJsonSchema} from "../constraints/jsonSchemaGrammar.js";
import type {GrammarConstraint} from "../backend/GrammarConstraint.js";
import {processLogits} from "../distributions/processLogits.js";
import {chiSquareGoodnessOfFit} from "../statistics/chiSquareGoodnessOfFit.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {type RunningServeServer, startServeServer} from "./startServeServer.js";

vi.setConfig(modelTestTimeouts);

/** What agents and evaluation harnesses ask of a server, through the official openai client, on the shipped family pair. */
const files = {
    target: new URL("../../models/target/model.gguf", import.meta.url).pathname,
    draft: new URL("../../models/draft/model.gguf", import.meta.url).pathname
};
const neutralSampler = {temperature: 1, top_p: 1, min_p: 0};
let target: ModelBackend;
let draft: ModelBackend;
let server: RunningServeServer;
let client: OpenAI;

beforeAll(async () => {
    target = await loadModelBackend(files.target, {threads: 1});
    draft = await loadModelBackend(files.draft, {threads: 1});
    server = await startServeServer({
        target,
        draft,
        modelName: "family",
        modelFiles: files,
        speculative: {policy: {kind: "strict"}, gamma: 4},
        // The tests send their samples at once.
        maxQueue: 2000,
        port: 0
    });
    client = new OpenAI({baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0});
});

afterAll(async () => {
    await server?.close();
    await draft?.dispose();
    await target?.dispose();
});

const Record_ = z.object({
    name: z.string().max(12),
    count: z.number().int(),
    colour: z.enum(["red", "green", "blue"]),
    place: z.object({town: z.string().max(10), floor: z.number().int()})
});

describe("structured outputs", () => {
    it("chat.completions.parse with a zod schema: 200 replies at T = 1 all parse and validate (strict speculative decoding)", async () => {
        const replies = await inBatches(200, (seed) =>
            client.chat.completions.parse({
                model: "family",
                messages: [{role: "user", content: "A record of the family:"}],
                response_format: zodResponseFormat(Record_, "record"),
                max_tokens: 200,
                seed,
                ...neutralSampler
            })
        );
        const drafted = replies.reduce(
            (sum, reply) => sum + (reply as unknown as {speculative: {num_draft_tokens: number}}).speculative.num_draft_tokens,
            0
        );
        expect(drafted).toBeGreaterThan(0);
        for (const reply of replies) {
            expect(reply.choices[0].finish_reason).toBe("stop");
            expect(Record_.parse(reply.choices[0].message.parsed)).toEqual(reply.choices[0].message.parsed);
        }
        // Sampled, not one fixed reply.
        expect(new Set(replies.map((reply) => reply.choices[0].message.content)).size).toBeGreaterThan(100);
    });

    it("json_object gives a JSON object; a schema keyword the grammar would not enforce is a 400 naming it", async () => {
        const reply = await client.chat.completions.create({
            model: "family",
            messages: [{role: "user", content: "Some JSON:"}],
            response_format: {type: "json_object"},
            max_tokens: 200,
            temperature: 0
        });
        const parsed = JSON.parse(reply.choices[0].message.content!) as unknown;
        expect(typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)).toBe(true);
        const refused = client.chat.completions.create({
            model: "family",
            messages: [{role: "user", content: "x"}],
            response_format: {type: "json_schema", json_schema: {name: "n", schema: {type: "number", multipleOf: 3}}}
        });
        await expect(refused).rejects.toMatchObject({status: 400});
        await expect(refused).rejects.toThrow(/multipleOf/);
    });

    it("strict under a grammar is distributed exactly as constrained target-only sampling (χ², 1500 replies)", async () => {
        const schema = {enum: ["red", "rose", "green", "blue"]};
        const prompt = "The colour of the door is ";
        const expected = await constrainedOutcomes(prompt, grammarForJsonSchema(schema));
        const outcomes = [...expected.keys()];
        expect(outcomes.sort()).toEqual(['"blue"', '"green"', '"red"', '"rose"']);
        const observed = new Float64Array(outcomes.length);
        const replies = await inBatches(
            1500,
            (seed) =>
                client.completions.create({
                    model: "family",
                    prompt,
                    max_tokens: 16,
                    seed,
                    ...neutralSampler,
                    response_format: {type: "json_schema", json_schema: {name: "colour", schema}},
                    speculative: {gamma: 4}
                } as never) as unknown as Promise<OpenAI.Completion>
        );
        for (const reply of replies) observed[outcomes.indexOf(reply.choices[0].text.trim())]++;
        const probabilities = Float64Array.from(outcomes.map((outcome) => expected.get(outcome)!));
        expect(chiSquareGoodnessOfFit(observed, probabilities).pValue).toBeGreaterThan(0.001);
        // The test can fail: the same counts against equal shares.
        expect(chiSquareGoodnessOfFit(observed, new Float64Array(outcomes.length).fill(1 / outcomes.length)).pValue).toBeLessThan(1e-6);
    });
});

/** `count` requests, at most 100 in flight (one socket each). */
async function inBatches<T>(count: number, request: (index: number) => Promise<T>): Promise<T[]> {
    const results: T[] = [];
    for (let start = 0; start < count; start += 100)
        results.push(
            ...(await Promise.all(Array.from({length: Math.min(100, count - start)}, (_unused, offset) => request(start + offset))))
        );
    return results;
}

/**
 * The target's constrained distribution over complete outputs after `prompt` at T = 1: a walk over
 * every token the grammar allows, each row masked by the grammar's state and renormalised, until the
 * grammar allows only the end of generation.
 */
async function constrainedOutcomes(prompt: string, grammar: string): Promise<Map<string, number>> {
    const outcomes = new Map<string, number>();
    const sequence = await target.createSequence();
    const walk = async (tokens: number[], state: GrammarConstraint, probability: number): Promise<void> => {
        await sequence.clear();
        const [row] = await sequence.evaluate(tokens);
        await state.maskLogits(row);
        const next = processLogits(row);
        for (let token = 0; token < next.length; token++) {
            if (next[token] === 0) continue;
            if (token === target.eosToken) {
                const text = target.detokenize(tokens.slice(promptLength));
                outcomes.set(text, (outcomes.get(text) ?? 0) + probability * next[token]);
                continue;
            }
            const child = state.clone();
            child.accept(token);
            await walk([...tokens, token], child, probability * next[token]);
            child.dispose();
        }
    };
    const start = withBos(target, target.tokenize(prompt));
    const promptLength = start.length;
    const root = constraintFor(target, grammar) as GrammarConstraint;
    await walk(start, root, 1);
    root.dispose();
    await sequence.dispose();
    return outcomes;
}

describe("prompt caching and logprobs through the openai client", () => {
    it("turn 2 of a chat reuses turn 1's KV (usage.prompt_tokens_details.cached_tokens) and says the same as without the cache", async () => {
        const messages: ChatCompletionCreateParamsNonStreaming["messages"] = [
            {role: "system", content: "You tell short family stories."},
            {role: "user", content: "Tell me about the grandmother."}
        ];
        const first = await client.chat.completions.create({model: "family", messages, max_tokens: 24, temperature: 0});
        messages.push({role: "assistant", content: first.choices[0].message.content}, {role: "user", content: "And the uncle?"});
        const second = await client.chat.completions.create({model: "family", messages, max_tokens: 24, temperature: 0});
        const uncached = await client.chat.completions.create({
            model: "family",
            messages,
            max_tokens: 24,
            temperature: 0,
            cache_prompt: false
        } as never);
        expect(second.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThan(first.usage!.prompt_tokens);
        expect(second.choices[0].message.content).toBe(uncached.choices[0].message.content);
    });

    it("chat logprobs with top_logprobs: the same with and without speculation at T = 0", async () => {
        const ask = (speculative: unknown) =>
            client.chat.completions.create({
                model: "family",
                messages: [{role: "user", content: "The family"}],
                max_tokens: 16,
                temperature: 0,
                logprobs: true,
                top_logprobs: 5,
                speculative
            } as never) as unknown as Promise<OpenAI.ChatCompletion>;
        const plain = await ask("off");
        const speculative = await ask({gamma: 4});
        const content = plain.choices[0].logprobs!.content!;
        expect(content.map((entry) => entry.token).join("")).toBe(plain.choices[0].message.content);
        expect(content.every((entry) => entry.top_logprobs.length === 5 && entry.top_logprobs[0].token === entry.token)).toBe(true);
        const close = (a: number, b: number) => Math.abs(a - b) < 1e-4;
        const speculativeContent = speculative.choices[0].logprobs!.content!;
        expect(speculativeContent.map((entry) => entry.token)).toEqual(content.map((entry) => entry.token));
        speculativeContent.forEach((entry, index) => {
            expect(close(entry.logprob, content[index].logprob), `token ${index}`).toBe(true);
            entry.top_logprobs.forEach((alternative, rank) => expect(alternative.token).toBe(content[index].top_logprobs[rank].token));
        });
    });
});
