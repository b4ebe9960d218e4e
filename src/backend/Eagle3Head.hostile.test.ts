import {mkdtempSync, rmSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import type {NativeEagle3HeadHandle} from "./Eagle3HeadHandle.js";
import {type NativeAddon, type NativeContextHandle, type NativeModelHandle, nativeAddon} from "./nativeAddon.js";
import {writeEagle3TestHead} from "./testing/eagle3TestHeads.js";
import {prefillSequence} from "./testing/prefillSequence.js";

vi.setConfig(modelTestTimeouts);

/**
 * The EAGLE-3 head and the layer capture as a trust boundary: hostile arguments are a TypeError or
 * RangeError naming the argument, and dispose orders cannot free what a head or a call in flight
 * uses. A crash would kill the test worker: the suite proves survival by finishing.
 */
const familyTarget = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const layers = Int32Array.from([1, 2, 3]);
const history = Int32Array.from([1, 7, 42, 99, 3, 120]);
const directory = mkdtempSync(join(tmpdir(), "specgate-eagle3-hostile-"));
const headPath = join(directory, "head.gguf");
afterAll(() => rmSync(directory, {recursive: true, force: true}));

/** Loosely typed access, as hostile JS calls it (wrong types on purpose). */
type Loose = (...args: unknown[]) => unknown;
const call = (target: object, method: string, ...args: unknown[]): unknown =>
    (target as Record<string, Loose>)[method]!.apply(target, args);

describe("the EAGLE-3 head at the addon's trust boundary", () => {
    let addon: NativeAddon;
    let target: NativeModelHandle;
    let head: NativeModelHandle;
    const contextOptions = {contextSize: 64, sequences: 2, batchSize: 64, threads: 1};
    const open: Array<{dispose(): void}> = [];
    const capturing = (): NativeContextHandle => {
        const context = new addon.NativeContext(target, {...contextOptions, captureLayers: layers});
        open.push(context);
        return context;
    };
    const headOn = (context: NativeContextHandle, sequence = 0): NativeEagle3HeadHandle => {
        const handle = new addon.Eagle3Head(head, context, sequence, {contextSize: 64, threads: 1});
        open.push(handle);
        return handle;
    };

    beforeAll(async () => {
        await writeEagle3TestHead(headPath, familyTarget, {seed: 9});
        addon = nativeAddon("cpu");
        target = new addon.NativeModel(familyTarget);
        head = new addon.NativeModel(headPath);
    });
    afterAll(() => {
        for (const each of open) each.dispose();
        head?.dispose();
        target?.dispose();
    });

    it("captureLayers must be three layers of the model, as an Int32Array", () => {
        const make = (captureLayers: unknown) => new addon.NativeContext(target, {...contextOptions, captureLayers} as never);
        expect(() => make([1, 2, 3])).toThrow(TypeError);
        expect(() => make(Int32Array.from([1, 2]))).toThrow(/options.captureLayers must hold 3 layer ids/);
        expect(() => make(Int32Array.from([1, 2, 4]))).toThrow(/options.captureLayers\[2\] = 4 is not a layer of the target's 4/);
        expect(() => make(Int32Array.from([-1, 2, 3]))).toThrow(RangeError);
    });

    it("a head needs an eagle3 model, a capturing context of the layers it reads, and one of its sequences", () => {
        const plain = new addon.NativeContext(target, contextOptions);
        open.push(plain);
        expect(() => new addon.Eagle3Head(target, capturing(), 0, {contextSize: 64, threads: 1})).toThrow(/must be an EAGLE-3 head/);
        expect(() => new addon.Eagle3Head(head, plain, 0, {contextSize: 64, threads: 1})).toThrow(/created without captureLayers/);
        const other = new addon.NativeContext(target, {...contextOptions, captureLayers: Int32Array.from([0, 1, 2])});
        open.push(other);
        expect(() => new addon.Eagle3Head(head, other, 0, {contextSize: 64, threads: 1})).toThrow(
            /captures layer 0 where the head reads 1/
        );
        expect(() => new addon.Eagle3Head(head, capturing(), 2, {contextSize: 64, threads: 1})).toThrow(RangeError);
        expect(() => new addon.Eagle3Head(head, {} as NativeContextHandle, 0, {contextSize: 64, threads: 1})).toThrow(TypeError);
        expect(() => new addon.Eagle3Head(head, capturing(), 0, {contextSize: 0, threads: 1})).toThrow(/options.contextSize/);
    });

    it("draft and next refuse bad histories, counts and destinations before any work", async () => {
        const context = capturing();
        await prefillSequence(context, history.subarray(0, -1));
        const handle = headOn(context);
        expect(() => call(handle, "draft", [1, 2], 1, new Int32Array(1))).toThrow(/history must be an Int32Array/);
        expect(() => handle.draft(new Int32Array(0), 1, new Int32Array(1))).toThrow(/history must hold at least the pending token/);
        expect(() => handle.draft(Int32Array.from([1, 260]), 1, new Int32Array(1))).toThrow(/history\[1\] = 260 is outside the vocabulary/);
        expect(() => handle.draft(history, 0, new Int32Array(1))).toThrow(/count/);
        expect(() => handle.draft(history, 1000, new Int32Array(1000))).toThrow(/count/);
        expect(() => handle.draft(history, 2, new Int32Array(1))).toThrow(/destination holds 1 elements/);
        expect(() => call(handle, "draft", history, 1, new Float32Array(260))).toThrow(TypeError);
        expect(() => handle.draft(history, 2, new Float64Array(260))).toThrow(/count must be 1 for a logit row/);
        expect(() => handle.next(-1, new Int32Array(1))).toThrow(/token/);
        await expect(headOn(context, 1).next(5, new Int32Array(1))).rejects.toThrow(/no draft is open/);
        const ids = new Int32Array(3);
        const result = await handle.draft(history, 3, ids);
        expect(result.groups[0]?.error).toBeUndefined();
        for (const id of ids) expect(id).toBeGreaterThanOrEqual(0);
        const row = new Float64Array(260);
        await handle.next(ids[0], row);
        expect(row.some((value) => value !== 0)).toBe(true);
        // On the calling thread (nothing else holds the head or the CPU now): the same ids, written before it returns.
        const now = new Int32Array(3);
        const inline = handle.draftNow(history, 3, now);
        expect(inline).not.toBeNull();
        expect(inline?.groups[0]?.error).toBeUndefined();
        expect(Array.from(now)).toEqual(Array.from(ids));
        expect(() => handle.draftNow(history, 0, now)).toThrow(/count/);
        expect(() => call(handle, "nextNow", 5, new Float32Array(260))).toThrow(TypeError);
    });

    it("a target sequence whose rows were not captured for this history drafts nothing, and says so", async () => {
        const context = capturing();
        await prefillSequence(context, Int32Array.from([1, 9, 9, 9, 9]), 1);
        const handle = headOn(context, 1);
        const ids = new Int32Array(2).fill(-7);
        const result = await handle.draft(history, 2, ids);
        expect(result.groups[0]?.error).toMatch(/not captured/);
        expect(Array.from(ids)).toEqual([-7, -7]);
    });

    it("disposing the target's context and models first leaves the head drafting; disposing the head mid-call is safe", async () => {
        const model = new addon.NativeModel(familyTarget);
        const headModel = new addon.NativeModel(headPath);
        const context = new addon.NativeContext(model, {...contextOptions, captureLayers: layers});
        await prefillSequence(context, history.subarray(0, -1));
        const handle = new addon.Eagle3Head(headModel, context, 0, {contextSize: 64, threads: 1});
        context.dispose();
        model.dispose();
        headModel.dispose();
        const ids = new Int32Array(2);
        await handle.draft(history, 2, ids);
        const pending = handle.draft(history, 2, new Int32Array(2));
        handle.dispose();
        await pending.catch(() => undefined);
        expect(() => handle.draft(history, 1, new Int32Array(1))).toThrow(/the head is disposed/);
    });
});
