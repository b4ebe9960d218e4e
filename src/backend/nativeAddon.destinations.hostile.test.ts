import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {
    type NativeContextHandle,
    type NativeModelHandle,
    type NativeOutputGroup,
    NativeOutputMode,
    type NativeSampling,
    nativeAddon
} from "./nativeAddon.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/**
 * A decode's destinations against JS that detaches (transfers) or shrinks them while the worker
 * thread runs. The worker writes only into memory the addon owns and the rows are copied out on the
 * main thread after checking each destination again, so the process survives, every destination
 * still attached gets its rows, and one detached or shrunk meanwhile gets nothing and the decode
 * rejects with a RangeError naming it. A destination on a resizable ArrayBuffer is refused up front.
 */
const familyTarget = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const prompt = Int32Array.from([1, 7, 42, 99, 3, 120]);
const positions = Int32Array.from(prompt, (_token, index) => index);
const sampling: NativeSampling = {temperature: 1, topK: 0, topP: 1, minP: 0};
let model: NativeModelHandle;
let vocabulary: number;

beforeAll(() => {
    model = new (nativeAddon().NativeModel)(familyTarget);
    vocabulary = model.vocabularySize;
});

afterAll(() => {
    model.dispose();
});

/** A fresh context's decode of the prompt with `groups`, the last two positions as outputs. */
async function decodeFresh(groups: (context: NativeContextHandle) => NativeOutputGroup[], between?: () => void): Promise<unknown> {
    const context = new (nativeAddon().NativeContext)(model, {contextSize: 64, sequences: 1, batchSize: 16, threads: 1});
    try {
        const pending = context.decode(prompt, new Int32Array(prompt.length), positions, groups(context));
        between?.();
        return await pending;
    } finally {
        context.dispose();
    }
}

/** Node 20's resizable ArrayBuffer (ES2024), which this project's TypeScript lib does not declare. */
type ResizableArrayBuffer = ArrayBuffer & {resize(byteLength: number): void};
const ResizableArrayBuffer = ArrayBuffer as unknown as new (byteLength: number, options: {maxByteLength: number}) => ResizableArrayBuffer;
/** Detaches `array`'s buffer, as a postMessage transfer does; the memory moves to the returned buffer. */
const transfer = (array: ArrayBufferView): ArrayBuffer =>
    structuredClone(array.buffer as ArrayBuffer, {transfer: [array.buffer as ArrayBuffer]});

const lastTwo = (): Int32Array => Int32Array.of(prompt.length - 2, prompt.length - 1);

/** Each mode's destination for two outputs, and its rows on an undisturbed decode. */
const modes = [
    {name: "Logits (Float32Array)", mode: NativeOutputMode.Logits, make: (): Float32Array => new Float32Array(2 * vocabulary)},
    {name: "Logits (Float64Array)", mode: NativeOutputMode.Logits, make: (): Float64Array => new Float64Array(2 * vocabulary)},
    {name: "Argmax", mode: NativeOutputMode.Argmax, make: (): Int32Array => new Int32Array(2)},
    {name: "Distribution", mode: NativeOutputMode.Distribution, make: (): Float64Array => new Float64Array(4 * vocabulary)},
    {name: "Probabilities", mode: NativeOutputMode.Probabilities, make: (): Float64Array => new Float64Array(2 * vocabulary)}
] as const;

describe("decode destinations that JS detaches or shrinks", () => {
    it("refuses a destination on a resizable ArrayBuffer, naming it, in decode and decodeNow", async () => {
        const context = new (nativeAddon().NativeContext)(model, {contextSize: 64, sequences: 1, batchSize: 16, threads: 1});
        try {
            const resizable = new ResizableArrayBuffer(2 * vocabulary * 4, {maxByteLength: 4 * vocabulary * 4});
            for (const destination of [new Float32Array(resizable), new Float32Array(resizable, 0, 2 * vocabulary)]) {
                const groups = [
                    {outputs: lastTwo(), mode: NativeOutputMode.Argmax, destination: new Int32Array(2)},
                    {outputs: Int32Array.of(0), mode: NativeOutputMode.Logits, destination}
                ];
                const refusal = /groups\[1\]\.destination must not be a view of a resizable ArrayBuffer/;
                expect(() => context.decode(prompt, new Int32Array(prompt.length), positions, groups)).toThrow(TypeError);
                expect(() => context.decode(prompt, new Int32Array(prompt.length), positions, groups)).toThrow(refusal);
                expect(() => context.decodeNow(prompt, new Int32Array(prompt.length), positions, groups)).toThrow(refusal);
            }
            // A growable SharedArrayBuffer only grows: accepted.
            const Growable = SharedArrayBuffer as unknown as new (
                byteLength: number,
                options: {maxByteLength: number}
            ) => SharedArrayBuffer;
            const shared = new Int32Array(new Growable(8, {maxByteLength: 64}));
            await context.decode(prompt, new Int32Array(prompt.length), positions, [
                {outputs: lastTwo(), mode: NativeOutputMode.Argmax, destination: shared}
            ]);
            expect([...shared].every((id) => id >= 0 && id < vocabulary)).toBe(true);
        } finally {
            context.dispose();
        }
    });

    for (const {name, mode, make} of modes)
        it(`${name}: a destination transferred after decode() gets nothing, the call rejects naming it, the others get their rows`, async () => {
            const expected = make();
            await decodeFresh(() => [{outputs: lastTwo(), mode, destination: expected, sampling}]);
            expect(expected.some((value) => value !== 0)).toBe(true);

            const moved = make();
            const kept = make();
            let transferred: ArrayBuffer | undefined;
            const decoding = decodeFresh(
                () => [
                    {outputs: Int32Array.of(prompt.length - 2), mode, destination: kept.subarray(0, kept.length / 2), sampling},
                    {outputs: Int32Array.of(prompt.length - 1), mode, destination: moved, sampling}
                ],
                () => {
                    transferred = transfer(moved);
                    // The memory moved to the new buffer is the JS program's now: the worker must not write into it.
                    new Uint8Array(transferred).fill(7);
                }
            );
            await expect(decoding).rejects.toThrow(RangeError);
            await expect(decoding).rejects.toThrow(/groups\[1\]\.destination was detached or shrunk while the decode ran/);
            expect(moved.length).toBe(0);
            expect(new Uint8Array(transferred!).every((byte) => byte === 7)).toBe(true);
            // The first group's rows arrived, equal to the undisturbed decode's first row.
            const rowLength = mode === NativeOutputMode.Argmax ? 1 : mode === NativeOutputMode.Distribution ? 2 * vocabulary : vocabulary;
            if (mode === NativeOutputMode.Distribution) {
                expect(kept.subarray(0, vocabulary)).toEqual(expected.subarray(0, vocabulary));
                expect(kept.subarray(vocabulary, 2 * vocabulary)).toEqual(expected.subarray(2 * vocabulary, 3 * vocabulary));
            } else {
                expect(kept.subarray(0, rowLength)).toEqual(expected.subarray(0, rowLength));
            }
        });

    it("a resizable destination that lies about being resizable and shrinks after decode() makes the call reject, not write past its end", async () => {
        const descriptor = Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, "resizable")!;
        const buffer = new ResizableArrayBuffer(2 * vocabulary * 4, {maxByteLength: 2 * vocabulary * 4});
        const destination = new Float32Array(buffer); // length-tracking: shrinks with its buffer
        Object.defineProperty(ArrayBuffer.prototype, "resizable", {configurable: true, get: () => false});
        let decoding: Promise<unknown>;
        try {
            decoding = decodeFresh(
                () => [{outputs: lastTwo(), mode: NativeOutputMode.Logits, destination}],
                () => buffer.resize(vocabulary * 4 - 4)
            );
        } finally {
            Object.defineProperty(ArrayBuffer.prototype, "resizable", descriptor);
        }
        await expect(decoding).rejects.toThrow(
            new RegExp(`groups\\[0\\]\\.destination was detached or shrunk while the decode ran: it holds ${vocabulary - 1} elements`)
        );
        expect(destination.every((value) => value === 0)).toBe(true);
    });

    it("survives many decodes whose destinations are transferred at random moments, and decodes as before", async () => {
        const expected = new Float32Array(2 * vocabulary);
        await decodeFresh(() => [{outputs: lastTwo(), mode: NativeOutputMode.Logits, destination: expected}]);
        const context = new (nativeAddon().NativeContext)(model, {contextSize: 64, sequences: 1, batchSize: 16, threads: 1});
        try {
            let rejected = 0;
            for (let round = 0; round < 40; round++) {
                context.clear();
                const destination = new Float32Array(2 * vocabulary);
                const pending = context.decode(prompt, new Int32Array(prompt.length), positions, [
                    {outputs: lastTwo(), mode: NativeOutputMode.Logits, destination}
                ]);
                // Transfer now, after a turn of the event loop, or never.
                if (round % 3 === 0) transfer(destination);
                else if (round % 3 === 1) setImmediate(() => transfer(destination));
                try {
                    await pending;
                    // Delivered before any transfer: the rows are the undisturbed decode's.
                    if (destination.length > 0) expect(destination).toEqual(expected);
                } catch (error) {
                    expect(error).toBeInstanceOf(RangeError);
                    rejected++;
                }
            }
            expect(rejected).toBeGreaterThanOrEqual(14);
        } finally {
            context.dispose();
        }
        const after = new Float32Array(2 * vocabulary);
        await decodeFresh(() => [{outputs: lastTwo(), mode: NativeOutputMode.Logits, destination: after}]);
        expect(after).toEqual(expected);
    });
});
