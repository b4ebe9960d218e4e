import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import type {BackendSequence, ModelBackend} from "./ModelBackend.js";
import {NativeBackend} from "./NativeBackend.js";
import {readModelHeader} from "./readModelHeader.js";
import {restrictVocabulary} from "./restrictVocabulary.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/**
 * A sequence's KV cache saved to host memory and restored (a prompt cache, as llama-server's
 * --cache-ram): the next token's logits after a restore are those of a sequence that decoded the
 * prompt itself — bit for bit, since the restored K/V rows are the same bytes at the same positions
 * and the next decode is the same computation — on a context of its own and on a shared one.
 */
const familyTarget = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const kvBytesPerToken = readModelHeader(familyTarget).kvCacheBytesPerToken!;

async function withSequences<T>(backend: ModelBackend, count: number, body: (sequences: BackendSequence[]) => Promise<T>): Promise<T> {
    const sequences = await Promise.all(Array.from({length: count}, () => backend.createSequence()));
    try {
        return await body(sequences);
    } finally {
        for (const sequence of sequences) await sequence.dispose();
    }
}

/** The next token's logits of a sequence that decoded `prompt` itself. */
async function reference(backend: ModelBackend, prompt: number[], next: number): Promise<Float64Array> {
    return withSequences(backend, 1, async ([sequence]) => {
        await sequence!.evaluate(prompt);
        return (await sequence!.evaluate([next]))[0]!;
    });
}

describe.each([
    {name: "a context of its own", options: {}},
    {name: "a shared context (batchedSequences 4)", options: {batchedSequences: 4, stepTokens: 16}},
    {name: "a shared unified context (batchedSequences 4)", options: {batchedSequences: 4, stepTokens: 16, unifiedKvCache: true}}
])("saveState and restoreState on $name", ({options}) => {
    let backend: NativeBackend;
    let prompt: number[];
    const next = 11;
    beforeAll(async () => {
        backend = await NativeBackend.load(familyTarget, {contextSize: 256, ...options});
        prompt = [1, ...backend.tokenize("A prompt cache keeps a sequence's KV cells in host memory for the next request.")];
    });
    afterAll(async () => {
        await backend?.dispose();
    });
    const deferredStateEdits = (): number =>
        (backend.batchStatistics as {deferredStateEdits?: number} | undefined)?.deferredStateEdits ?? 0;

    it("restores a cleared sequence and another that held other tokens: the next row is exactly the reference's", async () => {
        const expected = await reference(backend, prompt, next);
        await withSequences(backend, 2, async ([saved, other]) => {
            await saved!.evaluate(prompt);
            const state = await saved!.saveState!();
            expect(state.tokens).toEqual(prompt);
            // K and V rows of every cell, plus a few bytes of metadata per cell and per layer.
            expect(state.data.length).toBeGreaterThanOrEqual(prompt.length * kvBytesPerToken);
            expect(state.data.length).toBeLessThan(prompt.length * (kvBytesPerToken + 16) + 1024);
            await saved!.clear();
            await saved!.restoreState!(state);
            expect(saved!.tokens).toEqual(prompt);
            await other!.evaluate([5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]);
            await other!.restoreState!(state);
            expect(other!.tokens).toEqual(prompt);
            const rows = [(await saved!.evaluate([next]))[0]!, (await other!.evaluate([next]))[0]!];
            for (const row of rows) expect(row).toEqual(expected);
            // The sequences go on as usual: rollback and more tokens.
            await other!.rollback(1);
            expect((await other!.evaluate([next]))[0]).toEqual(expected);
        });
    });

    it("saves and restores while other sequences of the backend decode, with correct rows", async () => {
        const expected = await reference(backend, prompt, next);
        const long = Array.from({length: 120}, (_value, index) => 2 + ((index * 7) % 50));
        const longExpected = await reference(backend, long, next);
        await withSequences(backend, 4, async ([source, target, busy, busier]) => {
            await source!.evaluate(prompt);
            await target!.evaluate([3, 4, 5]);
            const deferredBefore = deferredStateEdits();
            for (let round = 0; round < 6; round++) {
                // A long prompt (chunked over several steps) and single tokens keep the shared context busy meanwhile.
                const decoding = Promise.all([
                    busy!.evaluate(long).then(() => busy!.evaluate([next])),
                    (async () => {
                        for (let index = 0; index < 8; index++) await busier!.evaluate([2 + index]);
                    })()
                ]);
                // Into the steps (a shared context): the save or the restore arrives while one runs.
                const stepsBefore = backend.batchStatistics?.steps ?? 0;
                for (let turn = 0; turn < 1000 && (backend.batchStatistics?.steps ?? 1) <= stepsBefore + (round % 3); turn++)
                    await new Promise((resolve) => setImmediate(resolve));
                const state = await source!.saveState!();
                await target!.restoreState!(state);
                const row = (await target!.evaluate([next]))[0]!;
                const [busyRows] = await decoding;
                // Exact with a KV stream per sequence. A unified cache puts the restored cells wherever cells are
                // free, among other sequences' cells, and attention then adds in another order: 3.7e-7 of the
                // row's largest logit measured, no more than llama.cpp's batch-dependent rounding.
                expect(maximumRelative(row, expected)).toBeLessThan(1e-6);
                expect(maximumRelative(busyRows[0]!, longExpected)).toBeLessThan(1e-6);
                await target!.rollback(1);
                await busy!.clear();
                await busier!.clear();
            }
            if (backend.batchedSequences > 1) expect(deferredStateEdits()).toBeGreaterThan(deferredBefore);
        });
    });
});

/** Largest |a − b| over the largest |b|. */
function maximumRelative(a: ArrayLike<number>, b: ArrayLike<number>): number {
    let difference = 0;
    let scale = 0;
    for (let index = 0; index < b.length; index++) {
        difference = Math.max(difference, Math.abs(a[index]! - b[index]!));
        scale = Math.max(scale, Math.abs(b[index]!));
    }
    return difference / scale;
}

describe("states between a shared context and contexts of their own (one backend)", () => {
    it("restore into either kind, whatever kind saved them", async () => {
        // Two shared sequences; a third gets a context of its own.
        const backend = await NativeBackend.load(familyTarget, {contextSize: 256, batchedSequences: 2});
        try {
            const prompt = [1, ...backend.tokenize("Moved between KV layouts.")];
            await withSequences(backend, 3, async ([sharedA, sharedB, own]) => {
                await sharedA!.evaluate(prompt);
                await own!.evaluate(prompt);
                const fromShared = await sharedA!.saveState!();
                const fromOwn = await own!.saveState!();
                const ownRow = (await own!.evaluate([7]))[0]!;
                const sharedRow = (await sharedA!.evaluate([7]))[0]!;
                await own!.restoreState!(fromShared);
                await sharedB!.restoreState!(fromOwn);
                // The same bytes in the same positions, decoded by each kind as it decodes its own.
                expect((await own!.evaluate([7]))[0]).toEqual(ownRow);
                expect((await sharedB!.evaluate([7]))[0]).toEqual(sharedRow);
            });
        } finally {
            await backend.dispose();
        }
    });

    it("refuses a malformed state, which leaves the sequence empty", async () => {
        const backend = await NativeBackend.load(familyTarget, {contextSize: 64});
        try {
            await withSequences(backend, 1, async ([sequence]) => {
                await sequence!.evaluate([1, 2, 3]);
                const state = await sequence!.saveState!();
                await expect(sequence!.restoreState!({tokens: [1, 2, 3], data: state.data.subarray(0, 20)})).rejects.toThrow();
                expect(sequence!.tokens).toEqual([]);
                await expect(sequence!.restoreState!({tokens: [1, backend.vocabularySize], data: state.data})).rejects.toThrow(/outside/);
                await sequence!.restoreState!(state);
                expect(sequence!.tokens).toEqual([1, 2, 3]);
                await sequence!.evaluate([4]);
            });
        } finally {
            await backend.dispose();
        }
    });
});

describe("saveState and restoreState of the test double and through restrictVocabulary", () => {
    it("carry the tokens", async () => {
        const table = Array.from({length: 8}, (_row, index) =>
            Float64Array.from({length: 8}, (_value, column) => (index === column ? 1 : 0))
        );
        const backend = restrictVocabulary(new BigramBackend(table), 6);
        await withSequences(backend, 2, async ([first, second]) => {
            await first!.evaluate([0, 2, 3]);
            const state = await first!.saveState!();
            expect(state).toEqual({tokens: [0, 2, 3], data: new Uint8Array(Int32Array.of(0, 2, 3).buffer)});
            await second!.evaluate([4]);
            await second!.restoreState!(state);
            expect(second!.tokens).toEqual([0, 2, 3]);
            await expect(second!.restoreState!({tokens: [7], data: new Uint8Array(0)})).rejects.toThrow(/outside/);
        });
    });
});
