import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {loadModelBackend} from "../../backend/loadModelBackend.js";
import type {ModelBackend} from "../../backend/ModelBackend.js";
import {parseDrafterSpec} from "./parseDrafterSpec.js";
import {writeCrossTokenizerModels} from "./testing/crossTokenizerModels.js";
import {runBench} from "../../benchRunner/runBench.js";
import {EmbeddedDecodePath} from "../../decodePaths/EmbeddedDecodePath.js";
import {TokenizerMismatchError} from "../../errors.js";
import {createServeApp} from "../../serve/createServeApp.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

// A Qwen3 target and a Llama 3 draft: llama.cpp's pairing rule refuses them; `model:retokenize`
// drafts across them in text (docs/drafters.md).
let directory: string;
let target: ModelBackend;
let draft: ModelBackend;

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-serve-cross-"));
    const paths = await writeCrossTokenizerModels(directory, 7, "qwen3", ["llama3"]);
    target = await loadModelBackend(paths.target, {threads: 1, contextSize: 512});
    draft = await loadModelBackend(paths.drafts.llama3!, {threads: 1, contextSize: 512});
});

afterAll(async () => {
    await target?.dispose();
    await draft?.dispose();
    if (directory !== undefined) await rm(directory, {recursive: true, force: true});
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Reply = Record<string, any>;

describe("a draft model of another vocabulary in serve, embedded decode paths and bench", () => {
    it("refuses the pair at start-up when the default drafter drafts in tokens, naming what differs and model:retokenize", () => {
        expect(() => createServeApp({target, draft, modelName: "qwen3"})).toThrow(TokenizerMismatchError);
        expect(() => createServeApp({target, draft, modelName: "qwen3", speculative: {drafter: parseDrafterSpec("ngram+model")}})).toThrow(
            /^draft: BOS differs: .*; the drafter "model:retokenize" drafts with a model of another vocabulary$/
        );
    });

    it("serves model:retokenize: the target's own text at temperature 0, with drafts proposed; a request naming `model` gets a 400", async () => {
        const {app} = createServeApp({
            target,
            draft,
            modelName: "qwen3",
            speculative: {drafter: parseDrafterSpec("model:retokenize"), gamma: 4}
        });
        const complete = async (body: Record<string, unknown>): Promise<{status: number; body: Reply}> => {
            const response = await app.request("/v1/completions", {
                method: "POST",
                headers: {"content-type": "application/json"},
                body: JSON.stringify(body)
            });
            return {status: response.status, body: (await response.json()) as Reply};
        };
        let proposed = 0;
        for (const prompt of ["Hello, world", "東京の天気は", "def add(a, b):"]) {
            const request = {prompt, max_tokens: 16, temperature: 0, ignore_eos: true};
            const off = await complete({...request, speculative: "off"});
            const across = await complete(request);
            expect(across.status).toBe(200);
            expect(across.body.choices[0].text).toBe(off.body.choices[0].text);
            expect(across.body.usage.completion_tokens).toBe(16);
            expect(across.body.speculative).toMatchObject({mode: "speculative", drafter: "model:retokenize", policy: "strict", gamma: 4});
            proposed += across.body.speculative.num_draft_tokens;
        }
        expect(proposed).toBeGreaterThan(0);
        const tokens = await complete({prompt: "Hello", max_tokens: 4, speculative: {drafter: "model"}});
        expect(tokens.status).toBe(400);
        expect(tokens.body.error).toMatchObject({
            param: "speculative.drafter",
            message: expect.stringContaining('"model:retokenize" drafts with it in text')
        });
        const lookup = await complete({prompt: "Hello", max_tokens: 4, speculative: {drafter: "ngram"}});
        expect(lookup.status).toBe(200);
    });

    it("drafts across tokenizers on an embedded decode path (canary, tais): target-only's text at temperature 0, the draft part of the path", async () => {
        expect(() => new EmbeddedDecodePath("b", target, draft, {drafter: "model"})).toThrow(
            /^b: draft: BOS differs: .*; the drafter "model:retokenize"/
        );
        const across = new EmbeddedDecodePath(
            "b",
            target,
            draft,
            {drafter: "model:retokenize", gamma: 4},
            {target: "qwen3.gguf", draft: "llama3.gguf"}
        );
        const alone = new EmbeddedDecodePath("a", target, undefined);
        for (const prompt of ["Hello, world", "東京の天気は"]) {
            const request = {prompt, maxTokens: 12, temperature: 0};
            expect((await across.complete(request)).tokens).toEqual((await alone.complete(request)).tokens);
        }
        expect(across.describe()).toMatchObject({
            parameters: {speculative: true, drafter: "model:retokenize"},
            files: {target: "qwen3.gguf", draft: "llama3.gguf"}
        });
    });

    it("benches model:retokenize beside target-only, and refuses a token drafter on the pair with the spec that drafts across it", async () => {
        const options = {
            target,
            draft,
            prompts: ["Hello, world", "東京の天気は"],
            policies: [{kind: "strict"} as const],
            gammas: [4],
            sampling: {temperature: 0, topK: 0, topP: 1, minP: 0},
            maxTokens: 10,
            seed: 1
        };
        const rows = await runBench({...options, drafters: [parseDrafterSpec("model:retokenize")]});
        expect(rows.map((row) => row.label)).toEqual(["target-only", "model:retokenize strict γ=4"]);
        expect(rows[1]).toMatchObject({drafter: "model:retokenize", exactMatchRate: 1});
        await expect(runBench({...options, drafters: [parseDrafterSpec("ngram+model")]})).rejects.toThrow(
            /^draft: BOS differs: .*; the drafter "model:retokenize"/
        );
    });
});
