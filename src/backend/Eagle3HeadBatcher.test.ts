import {describe, expect, it} from "vitest";
import {Eagle3HeadBatcher} from "./Eagle3HeadBatcher.js";
import type {NativeEagle3GroupDraft, NativeEagle3GroupDraw, NativeEagle3HeadGroupHandle} from "./Eagle3HeadHandle.js";
import type {NativeDecodeResult} from "./nativeAddon.js";

type Request = NativeEagle3GroupDraft | NativeEagle3GroupDraw;

/** A head group that records its calls and settles each one when the test says so; a slot's ids are its slot number. */
function fakeGroup(slots = 4) {
    const calls: Array<{requests: readonly Request[]; settle: () => void; fail: (error: Error) => void}> = [];
    const open = new Set<number>();
    const closed: number[] = [];
    let disposed = false;
    const group: NativeEagle3HeadGroupHandle = {
        vocabularySize: 10,
        slots,
        open() {
            for (let slot = 0; slot < slots; slot++)
                if (!open.has(slot)) {
                    open.add(slot);
                    return slot;
                }
            throw new RangeError("all slots are open");
        },
        close(slot) {
            open.delete(slot);
            closed.push(slot);
        },
        draft(requests) {
            if (requests.some((request) => request.history.length === 0))
                throw new RangeError("history must hold at least the pending token");
            return new Promise<NativeDecodeResult>((resolve, reject) => {
                const settle = () => {
                    for (const request of requests) if ("destination" in request) request.destination.fill(request.slot);
                    resolve({
                        decodeMilliseconds: 2,
                        transferMilliseconds: 0,
                        samplingMilliseconds: 0,
                        groups: requests.map((request) => ({
                            transferMilliseconds: 0,
                            samplingMilliseconds: 0,
                            ...(request.history[0] < 0 ? {error: "not captured"} : {})
                        }))
                    });
                };
                calls.push({requests, settle, fail: reject});
            });
        },
        next: () => Promise.reject(new Error("not used")),
        drawnAt: () => undefined,
        dispose() {
            disposed = true;
        }
    };
    return {group, calls, closed, isDisposed: () => disposed};
}

/** Two turns of the event loop: the batcher's next call, scheduled as the last one settled, has started. */
const turn = async () => {
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
};

describe("Eagle3HeadBatcher", () => {
    it("runs the drafts asked for in one turn in one call, and those that arrive while it runs in the next", async () => {
        const {group, calls} = fakeGroup();
        const batcher = new Eagle3HeadBatcher(group);
        const heads = [0, 1, 2].map((sequence) => batcher.openHead(sequence));
        const ids = heads.map(() => new Int32Array(4));
        const first = heads.slice(0, 2).map((head, index) => head.draft(Int32Array.of(1, 2), 4, ids[index]));
        await turn();
        expect(calls.map((call) => call.requests.map((request) => request.slot))).toEqual([[0, 1]]);
        const late = heads[2].draft(Int32Array.of(1, 2, 3), 4, ids[2]);
        await turn();
        expect(calls).toHaveLength(1);
        calls[0].settle();
        await Promise.all(first);
        await turn();
        expect(calls.map((call) => call.requests.map((request) => request.slot))).toEqual([[0, 1], [2]]);
        calls[1].settle();
        const result = await late;
        expect(result.groups).toHaveLength(1);
        expect(Array.from(ids[2])).toEqual([2, 2, 2, 2]);
        expect(batcher.stats).toMatchObject({calls: 2, sequences: 3, largest: 2, tokens: 12});
    });

    it("hands each request its own group: one without the target's rows is told so, the others draft", async () => {
        const {group, calls} = fakeGroup();
        const batcher = new Eagle3HeadBatcher(group);
        const [a, b] = [batcher.openHead(0), batcher.openHead(1)];
        const pending = [a.draft(Int32Array.of(-1, 2), 1, new Int32Array(1)), b.draft(Int32Array.of(1, 2), 1, new Int32Array(1))];
        await turn();
        calls[0].settle();
        const [missing, drafted] = await Promise.all(pending);
        expect(missing.groups[0].error).toBe("not captured");
        expect(drafted.groups[0].error).toBeUndefined();
    });

    it("refuses only the request the addon refuses; a failed call fails the requests in it", async () => {
        const {group, calls} = fakeGroup();
        const batcher = new Eagle3HeadBatcher(group);
        const [a, b] = [batcher.openHead(0), batcher.openHead(1)];
        const bad = a.draft(new Int32Array(0), 1, new Int32Array(1));
        const good = b.draft(Int32Array.of(1, 2), 1, new Int32Array(1));
        await turn();
        await expect(bad).rejects.toThrow(RangeError);
        await turn();
        expect(calls.map((call) => call.requests.map((request) => request.slot))).toEqual([[1]]);
        calls[0].fail(new Error("the EAGLE-3 head's decode failed"));
        await expect(good).rejects.toThrow("decode failed");
    });

    it("frees a disposed head's slot only once its call has settled, and refuses drafts after dispose", async () => {
        const {group, calls, closed, isDisposed} = fakeGroup(2);
        const batcher = new Eagle3HeadBatcher(group);
        const head = batcher.openHead(0);
        const drafting = head.draft(Int32Array.of(1, 2), 1, new Int32Array(1));
        await turn();
        head.dispose();
        await turn();
        expect(closed).toEqual([]);
        calls[0].settle();
        await drafting;
        await turn();
        expect(closed).toEqual([0]);
        const next = batcher.openHead(0);
        batcher.dispose();
        expect(isDisposed()).toBe(true);
        await expect(next.draft(Int32Array.of(1, 2), 1, new Int32Array(1))).rejects.toThrow("disposed");
    });

    it("a new head on a target sequence takes over its slot at once; its first draft runs after the old head's queued one", async () => {
        const {group, calls, closed} = fakeGroup(1);
        const batcher = new Eagle3HeadBatcher(group);
        const old = batcher.openHead(0);
        const first = old.draft(Int32Array.of(1, 2), 1, new Int32Array(1));
        await turn();
        const stale = old.draft(Int32Array.of(1, 2, 3), 1, new Int32Array(1));
        const replacement = batcher.openHead(0);
        expect(closed).toEqual([0]);
        expect(() => batcher.openHead(1)).toThrow(RangeError);
        const fresh = replacement.draft(Int32Array.of(4, 5), 1, new Int32Array(1));
        old.dispose();
        calls[0].settle();
        await first;
        await turn();
        expect(calls[1].requests.map((request) => Array.from(request.history))).toEqual([[1, 2, 3]]);
        calls[1].settle();
        await stale;
        await turn();
        expect(calls[2].requests.map((request) => Array.from(request.history))).toEqual([[4, 5]]);
        calls[2].settle();
        await fresh;
        await turn();
        // The old head's slot was taken over: its disposal frees nothing the new head uses.
        expect(closed).toEqual([0]);
    });
});
