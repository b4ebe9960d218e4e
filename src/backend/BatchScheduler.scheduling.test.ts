import {afterEach, beforeEach, describe, expect, it, vi} from "vitest";
import {BatchScheduler} from "./BatchScheduler.js";
import {NativeOutputMode, type NativeContextHandle, type NativeDecodeResult, type NativeOutputGroup} from "./nativeAddon.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/**
 * When steps start and how they are laid out, against a context double that records each decode's
 * sequence ids and takes a fixed time: what the scheduler decides, apart from llama.cpp's arithmetic
 * (BatchScheduler.test.ts checks that on a real context). Time is vitest's fake clock
 * (performance.now, timers and setImmediate), so the timings are exact however loaded the machine is.
 */
class RecordingContext implements NativeContextHandle {
    public readonly steps: number[][] = [];
    /** Steps' starts and ends and the KV edits, in the order the context saw them. */
    public readonly events: string[] = [];

    public constructor(private readonly stepMilliseconds: number) {}

    public async decode(
        _tokens: Int32Array,
        sequences: Int32Array,
        _positions: Int32Array,
        groups: readonly NativeOutputGroup[]
    ): Promise<NativeDecodeResult> {
        this.steps.push([...new Set(sequences)]);
        this.events.push(`step ${[...new Set(sequences)].join(",")}`);
        await new Promise((resolve) => setTimeout(resolve, this.stepMilliseconds));
        this.events.push("step done");
        return {
            decodeMilliseconds: this.stepMilliseconds,
            transferMilliseconds: 0,
            samplingMilliseconds: 0,
            groups: groups.map(() => ({transferMilliseconds: 0, samplingMilliseconds: 0}))
        };
    }

    public decodeNow(): NativeDecodeResult | null {
        return null;
    }

    public removeTokens(sequence: number, from: number): boolean {
        this.events.push(`remove ${sequence} from ${from}`);
        return true;
    }

    public copyTokens(): void {
        throw new Error("the scheduler never copies cells");
    }

    public clear(): void {}

    public saveSequence(sequence: number): Uint8Array {
        this.events.push(`save ${sequence}`);
        return Uint8Array.of(sequence);
    }

    public restoreSequence(sequence: number, data: Uint8Array): void {
        if (data.length === 0) throw new Error("refused");
        this.events.push(`restore ${sequence} from ${data[0]}`);
    }

    public dispose(): void {}
}

const noRows: NativeOutputGroup = {outputs: new Int32Array(0), mode: NativeOutputMode.None};
const sleep = (milliseconds: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, milliseconds));

/** Runs `work` to completion on the fake clock, one millisecond at a time. */
async function onFakeClock<T>(work: Promise<T>): Promise<T> {
    let settled = false;
    const watched = work.finally(() => {
        settled = true;
    });
    for (let elapsed = 0; !settled; elapsed++) {
        if (elapsed > 60_000) throw new Error("still running after 60 s of fake time");
        await vi.advanceTimersByTimeAsync(1);
    }
    return watched;
}

beforeEach(() => {
    vi.useFakeTimers({toFake: ["setTimeout", "clearTimeout", "setImmediate", "clearImmediate", "performance"]});
});

afterEach(() => {
    vi.useRealTimers();
});

describe("BatchScheduler scheduling", () => {
    it("lays a step out in sequence-id order, prompt chunks included", async () => {
        const context = new RecordingContext(1);
        const scheduler = new BatchScheduler(context, 3, {stepTokens: 512, decodeTokens: 4});
        const [first, second, third] = [scheduler.acquire()!, scheduler.acquire()!, scheduler.acquire()!];
        // Sequence 0 brings a prompt (longer than a decode), 1 and 2 a verification each, in one turn.
        await onFakeClock(
            Promise.all([
                third.decode([5, 6], 10, noRows),
                first.decode(
                    Array.from({length: 20}, (_value, index) => index + 1),
                    0,
                    noRows
                ),
                second.decode([7, 8, 9], 4, noRows)
            ])
        );
        expect(context.steps).toEqual([[0, 1, 2]]);
        scheduler.dispose();
    });

    it("saves and restores at once when idle, else after the running step (its rollbacks first) and before the next", async () => {
        const context = new RecordingContext(10);
        const scheduler = new BatchScheduler(context, 2, {stepTokens: 512});
        const [first, second] = [scheduler.acquire()!, scheduler.acquire()!];
        expect(await first.saveState()).toEqual(Uint8Array.of(0));
        expect(context.events).toEqual(["save 0"]);
        context.events.length = 0;
        // A step of sequence 0 runs; sequence 1 rolls back, saves, restores (one refused), and submits again meanwhile.
        const running = first.decode([1, 2], 0, noRows);
        await vi.advanceTimersByTimeAsync(1);
        expect(context.events).toEqual(["step 0"]);
        second.removeFrom(3);
        const saved = second.saveState();
        const restored = second.restoreState(Uint8Array.of(0));
        const refused = second.restoreState(new Uint8Array(0));
        const next = second.decode([3], 3, noRows);
        const [state] = await onFakeClock(Promise.all([saved, restored, refused.catch((error: Error) => error.message), running, next]));
        expect(state).toEqual(Uint8Array.of(1));
        await expect(refused).rejects.toThrow(/refused/);
        expect(context.events).toEqual(["step 0", "step done", "remove 1 from 3", "save 1", "restore 1 from 0", "step 1", "step done"]);
        // Disposed while a step runs: the edits queued behind it are refused.
        const last = first.decode([3], 2, noRows).catch(() => undefined);
        while (context.events.at(-1) !== "step 0") await vi.advanceTimersByTimeAsync(1);
        const orphan = first.saveState().then(
            () => "saved",
            (error: Error) => error.message
        );
        scheduler.dispose();
        expect(await onFakeClock(orphan)).toMatch(/disposed/);
        await onFakeClock(last);
        await expect(first.saveState()).rejects.toThrow(/disposed/);
    });

    it("learns how long the previous step's sequences take to come back and waits for them", async () => {
        // Two sequences in lockstep; the second always comes back 20 ms after the first (its JS and
        // draft steps take longer). A fixed 10 ms window would decode them in alternate steps forever.
        const context = new RecordingContext(60);
        const scheduler = new BatchScheduler(context, 2, {stepTokens: 512});
        const slots = [scheduler.acquire()!, scheduler.acquire()!];
        const rounds = 14;
        await onFakeClock(
            Promise.all(
                slots.map(async (slot, index) => {
                    for (let round = 0; round < rounds; round++) {
                        if (index === 1) await sleep(20);
                        await slot.decode([1], round, noRows);
                    }
                })
            )
        );
        // The second starts a step or two behind (nothing learned yet) and so ends alone; in between,
        // once its usual return time is known, every step carries both.
        expect(context.steps.slice(4, -4).map((sequences) => sequences.length)).toEqual(Array(context.steps.length - 8).fill(2));
        expect(context.steps.length).toBeLessThanOrEqual(rounds + 4);
        scheduler.dispose();
    });

    it("stops waiting for a sequence said to be idle (parked in a prompt cache between requests)", async () => {
        const run = async (parkFirst: boolean): Promise<number> => {
            const context = new RecordingContext(60);
            const scheduler = new BatchScheduler(context, 2, {stepTokens: 512});
            const [first, second] = [scheduler.acquire()!, scheduler.acquire()!];
            // Both learn their return time together; then the first's request ends.
            // Both come back 20 ms after each step (their JS and draft work); then the first's request ends.
            for (let round = 0; round < 3; round++)
                await onFakeClock(Promise.all([first, second].map(async (slot) => slot.decode([1], round, noRows).then(() => sleep(20)))));
            if (parkFirst) first.idle();
            const submitted = performance.now();
            await onFakeClock(second.decode([1], 3, noRows));
            scheduler.dispose();
            return performance.now() - submitted - 60;
        };
        // Without the notice the step waits for the first sequence's usual return (1.5 × 20 ms + 1 after
        // its hand-out, 20 ms of which have passed); with it, it starts at once.
        expect(await run(false)).toBeGreaterThan(5);
        expect(await run(true)).toBeLessThanOrEqual(1);
    });
});
