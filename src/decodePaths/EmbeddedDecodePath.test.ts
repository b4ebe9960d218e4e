import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import {writeRandomLlamaPair, type RandomLlamaPair} from "../gguf/randomLlamaModel.js";
import {EmbeddedDecodePath} from "./EmbeddedDecodePath.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

const target = BigramBackend.random(3, 12, {eosBias: -8});
const draft = target.noisyCopy(4, 3);
const request = {prompt: "abc", maxTokens: 40, temperature: 0};

describe("EmbeddedDecodePath on a bigram backend", () => {
    it("gives identical greedy text target-only and speculative with the strict policy", async () => {
        const targetOnly = new EmbeddedDecodePath("target-only", target, undefined);
        const strict = new EmbeddedDecodePath("strict", target, draft, {policy: {kind: "strict"}, gamma: 4});
        const [a, b] = await Promise.all([targetOnly.complete(request), strict.complete(request)]);
        expect(a.text.length).toBeGreaterThan(10);
        expect(b.text).toBe(a.text);
        expect(b.tokens).toEqual(a.tokens);
        expect(strict.describe().parameters).toMatchObject({speculative: true, gamma: 4, policy: {kind: "strict"}});
        expect(targetOnly.describe().parameters).toMatchObject({speculative: false, gamma: 0, policy: null});
    });

    it("drifts with a lossy fuzzy policy, and reports the target's logit gap at the first divergence", async () => {
        const targetOnly = new EmbeddedDecodePath("target-only", target, undefined);
        const fuzzy = new EmbeddedDecodePath("fuzzy", target, draft, {policy: {kind: "fuzzy", threshold: 100}, gamma: 4});
        const a = await targetOnly.complete(request);
        const b = await fuzzy.complete(request);
        expect(b.text).not.toBe(a.text);
        const index = a.tokens!.findIndex((token, position) => token !== b.tokens![position]);
        const gap = await targetOnly.targetLogitGap(request, a.tokens!.slice(0, index));
        // Greedy target-only decoding emits the target's argmax, so the gap's top token is what it emitted.
        expect(gap.top.token).toBe(a.tokens![index]);
        expect(gap.gap).toBeGreaterThanOrEqual(0);
        const previous = index === 0 ? target.tokenize("c")[0] : a.tokens![index - 1];
        const row = target.table[previous];
        expect(gap.top.logit).toBe(Math.max(...row));
    });
});

describe("EmbeddedDecodePath on GGUF files", () => {
    let directory: string;
    let pair: RandomLlamaPair;
    beforeAll(async () => {
        directory = await mkdtemp(join(tmpdir(), "specgate-embedded-"));
        pair = await writeRandomLlamaPair({directory, seed: 5});
    });
    afterAll(async () => {
        await rm(directory, {recursive: true, force: true});
    });

    it("opens a pair with node-llama-cpp and decodes identically target-only and strict at temperature 0", async () => {
        const targetOnly = await EmbeddedDecodePath.open("a", {target: pair.targetPath});
        const strict = await EmbeddedDecodePath.open(
            "b",
            {target: pair.targetPath, draft: pair.draftPath},
            {policy: {kind: "strict"}, gamma: 3}
        );
        try {
            const messages = {messages: [{role: "user" as const, content: "Say hello."}], maxTokens: 24, temperature: 0};
            const a = await targetOnly.complete(messages);
            const b = await strict.complete(messages);
            expect(a.tokens!.length).toBeGreaterThan(0);
            expect(b.text).toBe(a.text);
            expect(strict.describe().files).toEqual({target: pair.targetPath, draft: pair.draftPath});
            const gap = await targetOnly.targetLogitGap(messages, []);
            expect(gap.top.token).toBe(a.tokens![0]);
        } finally {
            await targetOnly.dispose();
            await strict.dispose();
        }
    });
});
