import {mkdtempSync, rmSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {type NativeAddon, type NativeContextHandle, type NativeModelHandle, nativeAddon, nativeBackendAvailable} from "./nativeAddon.js";
import {readModelHeader} from "./readModelHeader.js";
import {savedLayerRowBytes, savedLayerRowsFooterBytes, savedLlamaStateBytes} from "./savedLayerRows.js";
import {writeEagle3TestHead} from "./testing/eagle3TestHeads.js";
import {prefillSequence} from "./testing/prefillSequence.js";

vi.setConfig(modelTestTimeouts);

/**
 * A capturing context's saved sequence state carries the layer rows an EAGLE-3 head reads, and
 * restoring it puts them back in the tap: the head drafts on the restored sequence as on the one
 * that decoded the prompt.
 */
const familyTarget = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const layers = Int32Array.from([1, 2, 3]);
const prompt = Int32Array.from([1, 7, 42, 99, 3, 120, 17, 64, 5, 33, 8]);
const history = Int32Array.from([...prompt, 21]);
const directory = mkdtempSync(join(tmpdir(), "specgate-eagle3-tap-state-"));
const headPath = join(directory, "head.gguf");
afterAll(() => rmSync(directory, {recursive: true, force: true}));

/** Bytes per saved position: its token, and one row of each of the three layers (4-byte floats). */
const positionBytes = 4 + 3 * readModelHeader(familyTarget).embeddingLength! * 4;

/** The layer rows block of a saved state (what follows llama.cpp's bytes, footer excluded), or undefined without one. */
function savedRows(state: Uint8Array): Uint8Array | undefined {
    const llamaBytes = savedLlamaStateBytes(state);
    if (llamaBytes === undefined) return undefined;
    expect(savedLayerRowBytes(state)).toBe(state.length - llamaBytes);
    return state.subarray(llamaBytes, state.length - savedLayerRowsFooterBytes);
}

describe.runIf(nativeBackendAvailable("cpu"))("the layer rows saved and restored with a sequence's state", () => {
    let addon: NativeAddon;
    let target: NativeModelHandle;
    let head: NativeModelHandle;
    const open: Array<{dispose(): void}> = [];
    const context = (captureLayers?: Int32Array): NativeContextHandle => {
        const created = new addon.NativeContext(target, {contextSize: 64, sequences: 2, batchSize: 64, threads: 1, captureLayers});
        open.push(created);
        return created;
    };
    /** Greedy ids of a fresh head on `sequence` of `on`, and the error its draft gave (undefined: it drafted). */
    const draft = async (on: NativeContextHandle, sequence = 0) => {
        const handle = new addon.Eagle3Head(head, on, sequence, {contextSize: 64, threads: 1});
        open.push(handle);
        const ids = new Int32Array(4).fill(-1);
        const result = await handle.draft(history, 4, ids);
        return {ids: Array.from(ids), error: result.groups[0]?.error};
    };

    beforeAll(async () => {
        await writeEagle3TestHead(headPath, familyTarget, {seed: 9});
        addon = nativeAddon("cpu");
        target = new addon.NativeModel(familyTarget);
        head = new addon.NativeModel(headPath);
    });
    afterAll(() => {
        for (const each of open.reverse()) each.dispose();
        head?.dispose();
        target?.dispose();
    });

    it("restored rows equal the captured ones, and a head drafts on them as on the decoded sequence", async () => {
        const source = context(layers);
        await prefillSequence(source, prompt);
        const state = source.saveSequence(0);
        const rows = savedRows(state);
        // Every position's token and rows, after a header (layer ids, width, first position, count).
        expect(rows!.length).toBe(4 + 4 * layers.length + 12 + prompt.length * positionBytes);

        const restored = context(layers);
        await prefillSequence(restored, Int32Array.from([1, 9, 9, 9]), 1);
        restored.restoreSequence(1, state);
        const again = savedRows(restored.saveSequence(1));
        expect(again).toEqual(rows);

        const decoded = await draft(source);
        expect(decoded.error).toBeUndefined();
        expect(await draft(restored, 1)).toEqual(decoded);
    });

    it("saving drops rows past the KV cells the sequence still holds", async () => {
        const source = context(layers);
        await prefillSequence(source, prompt);
        const whole = savedRows(source.saveSequence(0))!;
        source.removeTokens(0, 6, -1);
        const cut = savedRows(source.saveSequence(0))!;
        expect(whole.length - cut.length).toBe((prompt.length - 6) * positionBytes);
    });

    it("a state without rows leaves the tap empty, and the head says why it does not draft", async () => {
        const plain = context();
        await prefillSequence(plain, prompt);
        const state = plain.saveSequence(0);
        expect(savedRows(state)).toBeUndefined();
        const capturing = context(layers);
        await prefillSequence(capturing, prompt);
        capturing.restoreSequence(0, state);
        const result = await draft(capturing);
        expect(result.error).toMatch(/not captured/);
        // A capturing context's state, rows and all, restores into a context without a tap.
        expect(() => plain.restoreSequence(1, capturing.saveSequence(0))).not.toThrow();
    });

    it("rows of other layers restore as none, and a footer that does not fit is a RangeError", async () => {
        const other = context(Int32Array.from([0, 1, 2]));
        await prefillSequence(other, prompt);
        const state = other.saveSequence(0);
        const capturing = context(layers);
        capturing.restoreSequence(0, state);
        expect((await draft(capturing)).error).toMatch(/not captured/);
        const broken = state.slice();
        new DataView(broken.buffer).setBigUint64(broken.length - savedLayerRowsFooterBytes, BigInt(broken.length), true);
        expect(() => capturing.restoreSequence(0, broken)).toThrow(/layer rows do not fit/);
    });
});
