import {mkdtempSync, rmSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import type {NativeEagle3HeadGroupHandle} from "./Eagle3HeadHandle.js";
import {type NativeAddon, type NativeContextHandle, type NativeModelHandle, nativeAddon, nativeBackendAvailable} from "./nativeAddon.js";
import {writeEagle3TestHead} from "./testing/eagle3TestHeads.js";

vi.setConfig(modelTestTimeouts);

/**
 * The EAGLE-3 head group at the addon's trust boundary: hostile requests are a TypeError or
 * RangeError naming the request and field, before anything runs; disposing while a call is in flight
 * frees nothing that call uses. A crash would kill the test worker: the suite proves survival by finishing.
 */
const familyTarget = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const layers = Int32Array.from([1, 2, 3]);
const history = Int32Array.from([1, 7, 42, 99, 3, 120]);
const directory = mkdtempSync(join(tmpdir(), "specgate-eagle3-group-hostile-"));
const headPath = join(directory, "head.gguf");
afterAll(() => rmSync(directory, {recursive: true, force: true}));

const sampling = {temperature: 1, topK: 0, topP: 1, minP: 0};

describe.runIf(nativeBackendAvailable("cpu"))("the EAGLE-3 head group at the addon's trust boundary", () => {
    let addon: NativeAddon;
    let target: NativeModelHandle;
    let head: NativeModelHandle;
    let context: NativeContextHandle;
    const open: Array<{dispose(): void}> = [];
    const groupOn = (slots = 2): NativeEagle3HeadGroupHandle => {
        const group = new addon.Eagle3HeadGroup(head, context, {contextSize: 64, threads: 1, slots});
        open.push(group);
        return group;
    };

    beforeAll(async () => {
        await writeEagle3TestHead(headPath, familyTarget, {seed: 9});
        addon = nativeAddon("cpu");
        target = new addon.NativeModel(familyTarget);
        head = new addon.NativeModel(headPath);
        context = new addon.NativeContext(target, {contextSize: 64, sequences: 2, batchSize: 64, threads: 1, captureLayers: layers});
        open.push(context);
    });
    afterAll(() => {
        for (const each of open.reverse()) each.dispose();
        head?.dispose();
        target?.dispose();
    });

    it("a group needs an eagle3 model and no more slots than the target's sequences", () => {
        expect(() => new addon.Eagle3HeadGroup(target, context, {contextSize: 64, threads: 1, slots: 2})).toThrow(
            /must be an EAGLE-3 head/
        );
        expect(() => groupOn(3)).toThrow(/options.slots/);
        expect(() => groupOn(0)).toThrow(/options.slots/);
        expect(groupOn(2).slots).toBe(2);
    });

    it("open gives each free slot once; close frees it", () => {
        const group = groupOn();
        expect([group.open(0), group.open(1)]).toEqual([0, 1]);
        expect(() => group.open(0)).toThrow(/all 2 slots of the head group are open/);
        expect(() => group.open(2)).toThrow(/targetSequence/);
        group.close(1);
        expect(group.open(1)).toBe(1);
    });

    it("every request names an open slot of its own, a history, and destinations of the right kind and length", () => {
        const group = groupOn();
        const slot = group.open(0);
        const draft = (requests: unknown) => group.draft(requests as never);
        const ids = new Int32Array(4);
        expect(() => draft({slot, history, count: 4, destination: ids})).toThrow(/requests must be an array/);
        expect(() => draft([])).toThrow(/requests must hold 1 to 2 requests/);
        expect(() => draft([{slot: 1, history, count: 4, destination: ids}])).toThrow(/requests\[0\].slot: slot 1 is not open/);
        const other = group.open(1);
        expect(() =>
            draft([
                {slot: other, history, count: 4, destination: ids},
                {slot: other, history, count: 4, destination: ids}
            ])
        ).toThrow(/requests\[1\].slot: slot 1 is asked for twice/);
        expect(() => draft([{slot, history: [1, 2], count: 4, destination: ids}])).toThrow(TypeError);
        expect(() => draft([{slot, history: Int32Array.of(1, 1_000_000), count: 4, destination: ids}])).toThrow(
            /history\[1\] = 1000000 is outside the vocabulary/
        );
        expect(() => draft([{slot, history, count: 8, destination: ids}])).toThrow(/destination holds 4 elements, fewer than the 8/);
        expect(() => draft([{slot, history, count: 2, destination: new Float64Array(1 << 16)}])).toThrow(/requests\[0\].count must be 1/);
        const drawn = {slot, history, options: {sampling, size: 8, minConfidence: 0}, ids, probabilities: new Float64Array(32)};
        expect(() => draft([{...drawn, uniforms: Float64Array.of(0.5, 1), logits: new Float64Array(32)}])).toThrow(
            /requests\[0\].uniforms\[1\] must be in \[0, 1\)/
        );
        expect(() => draft([{...drawn, uniforms: Float64Array.of(0.5), logits: new Float32Array(32)}])).toThrow(
            /requests\[0\].logits must be a Float64Array/
        );
    });

    it("a call on a target sequence without captured rows says so; one in flight as the group is disposed ends cleanly", async () => {
        const group = groupOn();
        const slot = group.open(1);
        const result = await group.draft([{slot, history, count: 2, destination: new Int32Array(2)}]);
        expect(result.groups[0].error).toMatch(/were not captured/);
        const doomed = new addon.Eagle3HeadGroup(head, context, {contextSize: 64, threads: 1, slots: 2});
        const pending = doomed.draft([{slot: doomed.open(0), history, count: 2, destination: new Int32Array(2)}]);
        doomed.dispose();
        // It ran if its worker had started, else it is refused: either way nothing it uses was freed.
        const outcome = await pending.then(
            (done) => done.groups[0].error,
            (error: Error) => error.message
        );
        expect(["the head group is disposed", "the target's hidden states for positions below 5 were not captured"]).toContain(outcome);
        expect(() => doomed.open(0)).toThrow(/disposed/);
    });
});
