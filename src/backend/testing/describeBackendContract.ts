import {mkdtemp, readFile, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {InvalidInputError, ModelLoadError, TokenOutOfRangeError} from "../../errors.js";
import {GgufWriter} from "../../gguf/GgufWriter.js";
import {type RandomLlamaPair, writeRandomLlamaPair} from "../../gguf/randomLlamaModel.js";
import {assertSameVocabulary} from "../assertSameVocabulary.js";
import type {ModelBackend} from "../ModelBackend.js";

export type LoadBackend = (path: string, options: {threads: number}) => Promise<ModelBackend>;

/**
 * What llama.cpp promises for "the same computation, batched differently" (a token alone, in a longer
 * batch, after a KV-cache rollback): not identical logits. The batch size picks the matmul kernel and
 * so the reduction order, and keys and values are stored in the F16 KV cache, whose unit roundoff is
 * 2^-11; which operands a CPU rounds to F16 on the way depends on its instruction set (observed
 * differences: 2e-6 on an AVX-512 machine, 5.3e-4 on one without). So two such rows agree to one F16
 * rounding of the row's logit scale, and their argmax is the same wherever the top two logits are
 * further apart than that. A wrong KV state moves logits by ≥ 0.1 (the negative control below).
 * A GPU backend's kernels pick their own reduction order and F16 intermediates per device, so GPU
 * suites allow a few roundings (`roundings`), still far below what a wrong KV state moves.
 */
export function sameComputationTolerance(row: ArrayLike<number>, roundings = 1): number {
    let scale = 1;
    for (let index = 0; index < row.length; index++) scale = Math.max(scale, Math.abs(row[index]));
    return roundings * 2 ** -11 * scale;
}

export function maximumDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
    let maximum = 0;
    for (let index = 0; index < a.length; index++) maximum = Math.max(maximum, Math.abs(a[index] - b[index]));
    return maximum;
}

/** Asserts two rows are the same computation up to what llama.cpp promises (see sameComputationTolerance). */
export function expectSameComputation(actual: ArrayLike<number>, expected: ArrayLike<number>, roundings = 1): void {
    const tolerance = sameComputationTolerance(expected, roundings);
    expect(maximumDifference(actual, expected)).toBeLessThanOrEqual(tolerance);
    let best = 0;
    let second = -Infinity;
    for (let index = 1; index < expected.length; index++) {
        if (expected[index] > expected[best]) {
            second = expected[best];
            best = index;
        } else if (expected[index] > second) second = expected[index];
    }
    if (expected[best] - second > 2 * tolerance) {
        let actualBest = 0;
        for (let index = 1; index < actual.length; index++) if (actual[index] > actual[actualBest]) actualBest = index;
        expect(actualBest).toBe(best);
    }
}

/**
 * The behaviour every ModelBackend must show, run against one implementation. `roundings`: F16
 * roundings two computations of the same row may differ by (sameComputationTolerance; 1 on the CPU).
 */
export function describeBackendContract(name: string, load: LoadBackend, {roundings = 1}: {roundings?: number} = {}): void {
    let directory: string;
    let pair: RandomLlamaPair;
    let target: ModelBackend;

    beforeAll(async () => {
        directory = await mkdtemp(join(tmpdir(), "specgate-backend-"));
        pair = await writeRandomLlamaPair({directory, seed: 11});
        target = await load(pair.targetPath, {threads: 1});
    });
    afterAll(async () => {
        await target?.dispose();
        await rm(directory, {recursive: true, force: true});
    });

    describe(name, () => {
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
            expect(rows[0]).not.toEqual(rows[1]);
            expect(sequence.tokens).toEqual(tokens);
            // The default position is the last one.
            expect(await sequence.evaluate([3 + 0x21])).toHaveLength(1);
            await sequence.dispose();
        });

        it("gives the same logits batched as one token at a time, up to F16 rounding (sameComputationTolerance)", async () => {
            const tokens = [1, ...target.tokenize("batch vs single")];
            const batched = await target.createSequence();
            const rows = await batched.evaluate(tokens, {positions: tokens.map((_, index) => index)});
            const single = await target.createSequence();
            for (let index = 0; index < tokens.length; index++) {
                const [row] = await single.evaluate([tokens[index]]);
                expectSameComputation(row, rows[index], roundings);
            }
            await batched.dispose();
            await single.dispose();
        });

        it("returns the argmax of the logits it would return, lowest id on ties", async () => {
            const tokens = [1, ...target.tokenize("argmax check")];
            const positions = tokens.map((_, index) => index);
            const withLogits = await target.createSequence();
            const rows = await withLogits.evaluate(tokens, {positions});
            const withArgmax = await target.createSequence();
            const ids = await withArgmax.evaluateArgmax!(tokens, {positions});
            expect(ids).toEqual(rows.map((row) => row.indexOf(Math.max(...row))));
            await withLogits.dispose();
            await withArgmax.dispose();
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
            expectSameComputation(afterRollback, expected, roundings);

            // Negative control: without the rollback the stale suffix changes the logits far beyond the tolerance.
            const stale = await target.createSequence();
            await stale.evaluate([...prefix, ...suffix]);
            const [withSuffix] = await stale.evaluate(next);
            expect(maximumDifference(withSuffix, expected)).toBeGreaterThan(0.1);

            await rolled.rollback(0);
            await rolled.clear();
            expect(rolled.tokens).toEqual([]);
            for (const sequence of [rolled, fresh, stale]) await sequence.dispose();
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
                    await load(path, {threads: 1});
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
            await expect(load(incomplete, {threads: 1})).rejects.toThrow(/context_length/);
        });

        it("accepts a draft with the same tokenizer and refuses one with a different tokenizer", async () => {
            const draft = await load(pair.draftPath, {threads: 1});
            expect(() => assertSameVocabulary(target, draft)).not.toThrow();
            expect(draft.vocabularyIdentity()).toBe(target.vocabularyIdentity());

            // Same size, different pieces: token 260 differs.
            const folderA = await mkdtemp(join(directory, "pieces-a-"));
            const folderB = await mkdtemp(join(directory, "pieces-b-"));
            const withAb = await writeRandomLlamaPair({directory: folderA, seed: 11, pieces: ["ab"]});
            const withBa = await writeRandomLlamaPair({directory: folderB, seed: 11, pieces: ["ba"]});
            const draftAb = await load(withAb.draftPath, {threads: 1});
            const targetBa = await load(withBa.targetPath, {threads: 1});
            expect(draftAb.vocabularySize).toBe(targetBa.vocabularySize);
            expect(() => assertSameVocabulary(targetBa, draftAb)).toThrow(
                'draft: token 260 differs: the target\'s is "ba", the draft\'s "ab"'
            );
            // One piece more: compatible by llama.cpp's rule, sharing the shorter vocabulary.
            expect(assertSameVocabulary(target, draftAb)).toBe(target.vocabularySize);

            for (const backend of [draft, draftAb, targetBa]) await backend.dispose();
        });

        it("validates the threads option", async () => {
            await expect(load(pair.targetPath, {threads: 0})).rejects.toThrow(InvalidInputError);
        });

        it("reuses a disposed sequence's context with an empty history, and a reused sequence evaluates like a fresh one", async () => {
            const backend = await load(pair.targetPath, {threads: 1});
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
                expectSameComputation(reused, fresh, roundings);
                await second.dispose();
            } finally {
                await backend.dispose();
            }
        });
    });
}
