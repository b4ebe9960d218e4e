import {mkdtemp, readFile, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {InvalidInputError, ModelLoadError, TokenizerMismatchError, TokenOutOfRangeError} from "../errors.js";
import {GgufWriter} from "../gguf/GgufWriter.js";
import {writeRandomLlamaPair, type RandomLlamaPair} from "../gguf/randomLlamaModel.js";
import {assertSameVocabulary} from "./assertSameVocabulary.js";
import {NodeLlamaCppBackend} from "./NodeLlamaCppBackend.js";

/**
 * Logit tolerance for "the same computation, batched differently". llama.cpp computes in float32;
 * evaluating a token alone, in a longer batch or after a KV-cache rollback changes matmul shapes and
 * so the reduction order, which moves logits of magnitude ~10 by a few float32 ulps: observed
 * ≤ 2e-6 here. 1e-4 leaves ~50× headroom and is still ~1000× below what a wrong KV state does
 * (the negative controls below see differences ≥ 0.1).
 */
const sameComputationTolerance = 1e-4;

function maximumDifference(a: Float64Array, b: Float64Array): number {
    let maximum = 0;
    for (let i = 0; i < a.length; i++)
        maximum = Math.max(maximum, Math.abs(a[i] - b[i]));
    return maximum;
}

let directory: string;
let pair: RandomLlamaPair;
let target: NodeLlamaCppBackend;

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-backend-"));
    pair = await writeRandomLlamaPair({directory, seed: 11});
    target = await NodeLlamaCppBackend.load(pair.targetPath, {threads: 1});
});
afterAll(async () => {
    await target?.dispose();
    await rm(directory, {recursive: true, force: true});
});

describe("NodeLlamaCppBackend", () => {
    it("loads a written GGUF and reports its vocabulary and context", () => {
        expect(target.vocabularySize).toBe(260);
        expect(target.contextSize).toBe(256);
        expect(target.bosToken).toBe(1);
        expect(target.eosToken).toBe(2);
        expect(target.vocabularyIdentity()).toMatch(/^[0-9a-f]{64}$/);
    });

    it("returns full-vocabulary raw logits for each requested position of one batch", async () => {
        const sequence = await target.createSequence();
        const tokens = [1, ...target.tokenize("Hello, world")];
        const rows = await sequence.evaluate(tokens, {positions: [0, 3, tokens.length - 1]});
        expect(rows).toHaveLength(3);
        for (const row of rows) {
            expect(row).toBeInstanceOf(Float64Array);
            expect(row.length).toBe(260);
            expect(row.every(Number.isFinite)).toBe(true);
        }
        expect(sequence.tokens).toEqual(tokens);
        // The default position is the last one.
        expect(await sequence.evaluate([3 + 0x21])).toHaveLength(1);
        await sequence.dispose();
    });

    it("gives the same logits batched as one token at a time", async () => {
        const tokens = [1, ...target.tokenize("batch vs single")];
        const batched = await target.createSequence();
        const rows = await batched.evaluate(tokens, {positions: tokens.map((_, index) => index)});
        const single = await target.createSequence();
        for (let index = 0; index < tokens.length; index++) {
            const [row] = await single.evaluate([tokens[index]]);
            expect(maximumDifference(row, rows[index])).toBeLessThan(sameComputationTolerance);
        }
        await batched.dispose();
        await single.dispose();
    });

    it("rolls back a rejected suffix: prefix+suffix, rollback, x equals a fresh prefix+x", async () => {
        const prefix = [1, ...target.tokenize("The prefix")];
        const suffix = target.tokenize(" rejected draft");
        const next = target.tokenize("!");

        const rolled = await target.createSequence();
        await rolled.evaluate([...prefix, ...suffix]);
        await rolled.rollback(suffix.length);
        expect(rolled.tokens).toEqual(prefix);
        const [afterRollback] = await rolled.evaluate(next);

        const fresh = await target.createSequence();
        const [expected] = await fresh.evaluate([...prefix, ...next]);
        expect(maximumDifference(afterRollback, expected)).toBeLessThan(sameComputationTolerance);

        // Negative control: without the rollback the stale suffix changes the logits far beyond the tolerance.
        const stale = await target.createSequence();
        await stale.evaluate([...prefix, ...suffix]);
        const [withSuffix] = await stale.evaluate(next);
        expect(maximumDifference(withSuffix, expected)).toBeGreaterThan(0.1);

        await rolled.rollback(0);
        await rolled.clear();
        expect(rolled.tokens).toEqual([]);
        for (const sequence of [rolled, fresh, stale])
            await sequence.dispose();
    });

    it("rejects bad tokens, positions, rollbacks and context overflow with typed errors", async () => {
        const sequence = await target.createSequence();
        await expect(sequence.evaluate([260])).rejects.toThrow(TokenOutOfRangeError);
        await expect(sequence.evaluate([1, 2], {positions: [2]})).rejects.toThrow(InvalidInputError);
        await expect(sequence.evaluate([], {positions: [0]})).rejects.toThrow(InvalidInputError);
        expect(await sequence.evaluate([])).toEqual([]);
        await expect(sequence.rollback(1)).rejects.toThrow(InvalidInputError);
        await expect(sequence.evaluate(new Array(257).fill(5))).rejects.toThrow(InvalidInputError);
        expect(() => target.detokenize([999])).toThrow(TokenOutOfRangeError);
        await sequence.dispose();
        await expect(sequence.evaluate([1])).rejects.toThrow(InvalidInputError);
    });

    it("refuses missing, non-GGUF and corrupt files with ModelLoadError", async () => {
        const reasonFor = async (path: string): Promise<string | undefined> => {
            try {
                await NodeLlamaCppBackend.load(path, {threads: 1});
                return undefined;
            } catch (error) {
                expect(error).toBeInstanceOf(ModelLoadError);
                return (error as ModelLoadError).reason;
            }
        };
        expect(await reasonFor(join(directory, "does-not-exist.gguf"))).toBe("missing");

        const text = join(directory, "notes.gguf");
        await writeFile(text, "this is not a model\n");
        expect(await reasonFor(text)).toBe("not_gguf");

        const bytes = await readFile(pair.targetPath);
        const truncated = join(directory, "truncated.gguf");
        await writeFile(truncated, bytes.subarray(0, bytes.length - 1000));
        expect(await reasonFor(truncated)).toBe("corrupt");

        const headerOnly = join(directory, "header-only.gguf");
        await writeFile(headerOnly, bytes.subarray(0, 40));
        expect(await reasonFor(headerOnly)).toBe("corrupt");

        // A well-formed GGUF that llama.cpp itself rejects (no llama.* hyperparameters, no tensors).
        const incomplete = join(directory, "incomplete.gguf");
        await new GgufWriter()
            .setString("general.architecture", "llama")
            .setString("tokenizer.ggml.model", "llama")
            .setArray("tokenizer.ggml.tokens", 8, ["<unk>", "<s>", "</s>"])
            .writeFile(incomplete);
        await expect(NodeLlamaCppBackend.load(incomplete, {threads: 1})).rejects.toThrow(/context_length/);
    });

    it("accepts a draft with the same tokenizer and refuses one with a different tokenizer", async () => {
        const draft = await NodeLlamaCppBackend.load(pair.draftPath, {threads: 1});
        expect(() => assertSameVocabulary(target, draft)).not.toThrow();
        expect(draft.vocabularyIdentity()).toBe(target.vocabularyIdentity());

        // Same size, different pieces: only the identity hash can tell them apart.
        const folderA = await mkdtemp(join(directory, "pieces-a-"));
        const folderB = await mkdtemp(join(directory, "pieces-b-"));
        const withAb = await writeRandomLlamaPair({directory: folderA, seed: 11, pieces: ["ab"]});
        const withBa = await writeRandomLlamaPair({directory: folderB, seed: 11, pieces: ["ba"]});
        const draftAb = await NodeLlamaCppBackend.load(withAb.draftPath, {threads: 1});
        const targetBa = await NodeLlamaCppBackend.load(withBa.targetPath, {threads: 1});
        expect(draftAb.vocabularySize).toBe(targetBa.vocabularySize);
        expect(() => assertSameVocabulary(targetBa, draftAb)).toThrow(TokenizerMismatchError);
        // Different sizes.
        expect(() => assertSameVocabulary(target, draftAb)).toThrow(TokenizerMismatchError);

        for (const backend of [draft, draftAb, targetBa])
            await backend.dispose();
    });

    it("validates the threads option", async () => {
        await expect(NodeLlamaCppBackend.load(pair.targetPath, {threads: 0})).rejects.toThrow(InvalidInputError);
    });
});

describe("sequence pool", () => {
    it("reuses a disposed sequence's context with an empty history, and a reused sequence evaluates like a fresh one", async () => {
        const backend = await NodeLlamaCppBackend.load(pair.targetPath, {threads: 1});
        try {
            const tokens = backend.tokenize("pool test");
            const first = await backend.createSequence();
            const [fresh] = await first.evaluate(tokens);
            await first.evaluate(backend.tokenize(" and more text"));
            await first.dispose();
            await expect(first.evaluate(tokens)).rejects.toThrow(/disposed/);
            const second = await backend.createSequence();
            expect(second.tokens).toEqual([]);
            const [reused] = await second.evaluate(tokens);
            for (let index = 0; index < fresh.length; index++) expect(Math.abs(reused[index] - fresh[index])).toBeLessThan(1e-4);
            await second.dispose();
        } finally {
            await backend.dispose();
        }
    });
});
