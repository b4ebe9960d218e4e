import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {
    type NativeAddon,
    type NativeContextHandle,
    type NativeContextOptions,
    type NativeGrammarHandle,
    type NativeModelHandle,
    type NativeOutputGroup,
    NativeOutputMode,
    nativeAddon
} from "./nativeAddon.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {slowGrammar} from "../testing/slowGrammar.js";

vi.setConfig(modelTestTimeouts);

/**
 * The native addon as a trust boundary: its classes called directly with hostile arguments, foreign
 * receivers and dispose orders that JS code must not be able to turn into a crash. Every call either
 * throws a JS error naming what was wrong or behaves. A crash (an abort in llama.cpp, a C++ exception
 * escaping, a use after free) would kill the test worker: the suite proves survival by finishing, and
 * at its end a normal decode still gives the logits it gave at its start.
 */
const familyTarget = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const options: NativeContextOptions = {contextSize: 64, sequences: 1, batchSize: 16, threads: 1};
const prompt = Int32Array.from([1, 7, 42, 99, 3, 120]);

/** Loosely typed access, as hostile JS calls it (wrong types on purpose). */
type Loose = (...args: unknown[]) => unknown;
const call = (target: object, method: string, ...args: unknown[]): unknown =>
    (target as Record<string, Loose>)[method]!.apply(target, args);
/** A class's prototype, whose methods hostile JS may call on any receiver. */
const prototypeOf = (constructor: unknown): Record<string, Loose> => (constructor as {prototype: Record<string, Loose>}).prototype;

describe("the native addon at its trust boundary", () => {
    let addon: NativeAddon;
    let model: NativeModelHandle;
    let context: NativeContextHandle;
    let vocabulary: number;
    /** The prompt's last logit row on a fresh context, before any hostile call. */
    let baseline: Float32Array;

    /** The prompt decoded on a fresh context of `on`: its last logit row. */
    async function promptLogits(on: NativeModelHandle = model): Promise<Float32Array> {
        const fresh = new addon.NativeContext(on, options);
        try {
            const destination = new Float32Array(vocabulary);
            await fresh.decode(
                prompt,
                new Int32Array(prompt.length),
                Int32Array.from(prompt, (_token, index) => index),
                [{outputs: Int32Array.of(prompt.length - 1), mode: NativeOutputMode.Logits, destination}]
            );
            return destination;
        } finally {
            fresh.dispose();
        }
    }

    beforeAll(async () => {
        addon = nativeAddon();
        model = new addon.NativeModel(familyTarget);
        vocabulary = model.vocabularySize;
        context = new addon.NativeContext(model, options);
        baseline = await promptLogits();
    });

    afterAll(() => {
        context.dispose();
        model.dispose();
    });

    it("refuses malformed model construction", () => {
        const NativeModel = addon.NativeModel as unknown as new (...args: unknown[]) => NativeModelHandle;
        expect(() => new NativeModel()).toThrow(/path must be a string/);
        expect(() => new NativeModel(42)).toThrow(/path must be a string/);
        expect(() => new NativeModel(`${familyTarget}\0.txt`)).toThrow(/path must not contain NUL/);
        expect(() => new NativeModel(familyTarget, 5)).toThrow(/options must be an object/);
        expect(() => new NativeModel(familyTarget, {gpuLayers: "all"})).toThrow(/options\.gpuLayers must be a number/);
        expect(() => new NativeModel(familyTarget, {gpuLayers: 1.5})).toThrow(/options\.gpuLayers must be an integer/);
        expect(() => new NativeModel(familyTarget, {gpuLayers: -2})).toThrow(/options\.gpuLayers must be in/);
        expect(() => new NativeModel("/nonexistent/model.gguf")).toThrow(/could not load the model/);
        expect(() => (addon.NativeModel as unknown as Loose)(familyTarget)).toThrow(/without 'new'/);
    });

    it("refuses foreign receivers and foreign objects in place of its classes", () => {
        const modelPrototype = prototypeOf(addon.NativeModel);
        const contextPrototype = prototypeOf(addon.NativeContext);
        const foreign = [{}, Object.create(modelPrototype) as object, Object.create(contextPrototype) as object];
        // V8's own receiver check answers "Illegal invocation"; the addon's type tags, "this must be a …".
        const wrongReceiver = /Illegal invocation|this must be a/;
        for (const receiver of [...foreign, context]) {
            expect(() => modelPrototype.tokenize!.call(receiver, "text", false)).toThrow(wrongReceiver);
            expect(() => modelPrototype.dispose!.call(receiver)).toThrow(wrongReceiver);
            expect(() => Object.getOwnPropertyDescriptor(modelPrototype, "vocabularySize")!.get!.call(receiver)).toThrow(wrongReceiver);
        }
        for (const receiver of [...foreign, model]) {
            expect(() => contextPrototype.clear!.call(receiver)).toThrow(wrongReceiver);
            expect(() => contextPrototype.removeTokens!.call(receiver, 0, 0, -1)).toThrow(wrongReceiver);
            expect(() => contextPrototype.copyTokens!.call(receiver, 0, 1, 0, -1)).toThrow(wrongReceiver);
            expect(() => contextPrototype.saveSequence!.call(receiver, 0)).toThrow(wrongReceiver);
            expect(() => contextPrototype.restoreSequence!.call(receiver, 0, new Uint8Array(16))).toThrow(wrongReceiver);
            expect(() =>
                contextPrototype.decodeNow!.call(receiver, prompt, new Int32Array(prompt.length), new Int32Array(prompt.length), [])
            ).toThrow(wrongReceiver);
        }
        const {clear} = context;
        expect(() => clear()).toThrow(wrongReceiver);
        // A context's prototype grafted onto a model (or a plain object) does not make it one.
        const grafted = Object.setPrototypeOf(new addon.NativeModel(familyTarget), contextPrototype) as NativeContextHandle &
            NativeModelHandle;
        expect(() => grafted.clear()).toThrow(wrongReceiver);
        modelPrototype.dispose!.call(grafted);
        const NativeContext = addon.NativeContext as unknown as new (...args: unknown[]) => NativeContextHandle;
        for (const notAModel of [
            undefined,
            null,
            7,
            "model",
            ...foreign,
            context,
            Object.setPrototypeOf({}, Object.getPrototypeOf(model) as object)
        ])
            expect(() => new NativeContext(notAModel, options)).toThrow(/model must be a NativeModel/);
    });

    it("checks tokenize's and detokenize's arguments", () => {
        expect(() => call(model, "tokenize", 42, false)).toThrow(/text must be a string/);
        expect(() => call(model, "tokenize")).toThrow(/text must be a string/);
        expect(model.tokenize("", false)).toEqual(new Int32Array(0));
        expect(model.tokenize("a\0b", false).length).toBeGreaterThan(0);
        for (const notInt32 of [
            undefined,
            [1, 2],
            new Float32Array(2),
            new Uint8Array(3),
            new Float64Array(1),
            new Uint32Array(1),
            new DataView(new ArrayBuffer(8))
        ])
            expect(() => call(model, "detokenize", notInt32)).toThrow(/tokens must be an Int32Array/);
        for (const id of [-1, vocabulary, 2 ** 31 - 1, -(2 ** 31)])
            expect(() => model.detokenize(Int32Array.of(1, id))).toThrow(
                new RegExp(`tokens\\[1\\] = ${id} is outside the vocabulary of ${vocabulary} ids`)
            );
        expect(model.detokenize(new Int32Array(0))).toBe("");
        expect(typeof model.detokenize(Int32Array.of(0, vocabulary - 1))).toBe("string");
    });

    it("refuses malformed context options", () => {
        const NativeContext = addon.NativeContext as unknown as new (...args: unknown[]) => NativeContextHandle;
        expect(() => new NativeContext(model)).toThrow(/options must be an object/);
        expect(() => new NativeContext(model, 3)).toThrow(/options must be an object/);
        const cases: Array<[Partial<Record<keyof NativeContextOptions, unknown>>, RegExp]> = [
            [{sequences: 0}, /options\.sequences must be in/],
            [{sequences: 100_000}, /options\.sequences must be in/],
            [{sequences: 1.5}, /options\.sequences must be an integer/],
            [{sequences: undefined}, /options\.sequences must be a number/],
            [{contextSize: Number.NaN}, /options\.contextSize must be an integer/],
            [{contextSize: -64}, /options\.contextSize must be in/],
            [{contextSize: 2 ** 31}, /options\.contextSize must be in/],
            [{sequences: 4, contextSize: 2 ** 30}, /options\.contextSize must be in/],
            [{batchSize: Infinity}, /options\.batchSize must be an integer/],
            [{batchSize: 0}, /options\.batchSize must be in/],
            [{threads: 0}, /options\.threads must be in/],
            [{threads: -1}, /options\.threads must be in/],
            [{threads: 1_000_000}, /options\.threads must be in/],
            [{threads: "2"}, /options\.threads must be a number/]
        ];
        for (const [change, message] of cases) expect(() => new NativeContext(model, {...options, ...change})).toThrow(message);
    });

    describe.each(["decode", "decodeNow"] as const)("%s", (method) => {
        const positions = Int32Array.from(prompt, (_token, index) => index);
        const sequences = new Int32Array(prompt.length);
        const logits = (outputs = 1): {outputs: Int32Array; mode: number; destination: Float32Array} => ({
            outputs: Int32Array.from({length: outputs}, (_value, index) => index),
            mode: NativeOutputMode.Logits,
            destination: new Float32Array(outputs * vocabulary)
        });
        /** decode's arguments with the one at `index` replaced. */
        const replaced = (index: number, value: unknown): unknown[] => {
            const args: unknown[] = [prompt, sequences, positions, [logits()], undefined];
            args[index] = value;
            return args;
        };
        const refuses = (args: unknown[], message: RegExp): void => {
            expect(() => call(context, method, ...args)).toThrow(message);
        };

        it("refuses tokens, sequences and positions that are not equally long Int32Arrays of valid values", () => {
            for (const [index, name] of [
                [0, "tokens"],
                [1, "sequences"],
                [2, "positions"]
            ] as const)
                for (const value of [
                    undefined,
                    null,
                    5,
                    Array.from(prompt),
                    new Float32Array(prompt.length),
                    new Uint8Array(prompt.length),
                    new Uint32Array(prompt.length),
                    new BigInt64Array(prompt.length)
                ])
                    refuses(replaced(index, value), new RegExp(`${name} must be an Int32Array`));
            refuses([new Int32Array(0), new Int32Array(0), new Int32Array(0), []], /tokens must not be empty/);
            refuses(replaced(1, new Int32Array(prompt.length - 1)), /sequences must be as long as tokens/);
            refuses(replaced(2, new Int32Array(prompt.length + 1)), /positions must be as long as tokens/);
            for (const id of [-1, vocabulary, 2 ** 31 - 1, -(2 ** 31)])
                refuses(
                    [Int32Array.of(1, id), new Int32Array(2), Int32Array.of(0, 1), []],
                    new RegExp(`tokens\\[1\\] = ${id} is outside the vocabulary`)
                );
            for (const sequence of [1, -1, 255, 2 ** 31 - 1])
                refuses(
                    [Int32Array.of(1, 2), Int32Array.of(0, sequence), Int32Array.of(0, 1), []],
                    new RegExp(`sequences\\[1\\] = ${sequence} is not one of this context's 1 sequences`)
                );
            for (const position of [-1, 2 ** 30, 2 ** 31 - 1])
                refuses(
                    [Int32Array.of(1, 2), new Int32Array(2), Int32Array.of(0, position), []],
                    new RegExp(`positions\\[1\\] = ${position} is outside`)
                );
            const tooMany = options.batchSize + 1;
            refuses(
                [
                    new Int32Array(tooMany).fill(1),
                    new Int32Array(tooMany),
                    Int32Array.from({length: tooMany}, (_value, index) => index),
                    []
                ],
                /more than the context's batch size 16/
            );
        });

        it("refuses malformed output groups", () => {
            for (const groups of [undefined, {}, "groups", new Int32Array(1)]) refuses(replaced(3, groups), /groups must be an array/);
            refuses(replaced(3, [5]), /groups\[0\] must be an object/);
            refuses(replaced(3, [logits(), null]), /groups\[1\] must be an object/);
            refuses(replaced(3, [{...logits(), outputs: [0]}]), /groups\[0\]\.outputs must be an Int32Array/);
            for (const mode of [undefined, "1", 10, -1, 1.5, Number.NaN]) refuses(replaced(3, [{...logits(), mode}]), /groups\[0\]\.mode/);
            const drawn = {...logits(), mode: 5, destination: new Int32Array(1), sampling: {temperature: 1, topK: 0, topP: 1, minP: 0}};
            for (const uniforms of [undefined, [0.5], new Float32Array(1)])
                refuses(replaced(3, [{...drawn, uniforms}]), /groups\[0\]\.uniforms must be a Float64Array/);
            refuses(
                replaced(3, [{...drawn, uniforms: new Float64Array(2)}]),
                /groups\[0\]\.uniforms holds 2 values, not one per output \(1\)/
            );
            for (const uniform of [1, -0.5, Number.NaN, Infinity])
                refuses(
                    replaced(3, [{...drawn, uniforms: Float64Array.of(uniform)}]),
                    /groups\[0\]\.uniforms\[0\] = .* is outside \[0, 1\)/
                );
            const verified = {...drawn, mode: 6, destination: new Float64Array(2), uniforms: Float64Array.of(0.5)};
            for (const drafted of [undefined, [1], new Float64Array(1)])
                refuses(replaced(3, [{...verified, drafted}]), /groups\[0\]\.drafted must be an Int32Array/);
            refuses(replaced(3, [{...verified, drafted: new Int32Array(2)}]), /groups\[0\]\.drafted holds 2 ids, not one per output \(1\)/);
            for (const id of [-2, vocabulary])
                refuses(
                    replaced(3, [{...verified, drafted: Int32Array.of(id)}]),
                    new RegExp(`groups\\[0\\]\\.drafted\\[0\\] = ${id} is neither -1 nor an id of the vocabulary of ${vocabulary}`)
                );
            refuses(
                replaced(3, [{...verified, drafted: Int32Array.of(1), destination: new Float64Array(1)}]),
                /holds 1 elements, fewer than the 2/
            );
            const candidates = {
                ...verified,
                mode: 8,
                destination: new Float64Array(5),
                uniforms: Float64Array.of(0.1, 0.9),
                drafted: Int32Array.of(1),
                width: 2
            };
            for (const width of [undefined, 0, 65, 1.5]) refuses(replaced(3, [{...candidates, width}]), /groups\[0\]\.width/);
            refuses(
                replaced(3, [{...candidates, uniforms: Float64Array.of(0.5)}]),
                /groups\[0\]\.uniforms holds 1 values, not 2 per output \(1\)/
            );
            refuses(replaced(3, [{...candidates, destination: new Float64Array(4)}]), /holds 4 elements, fewer than the 5/);
            const gathered = {...drawn, mode: 9, destination: new Float64Array(3), drafted: Int32Array.of(1, 2, 3), width: 3};
            refuses(replaced(3, [{...gathered, drafted: Int32Array.of(1, 2)}]), /groups\[0\]\.drafted holds 2 ids, not 3 per output \(1\)/);
            refuses(
                replaced(3, [{...gathered, drafted: Int32Array.of(1, vocabulary, 3)}]),
                new RegExp(`groups\\[0\\]\\.drafted\\[1\\] = ${vocabulary} is neither -1 nor an id of the vocabulary`)
            );
            for (const index of [-1, prompt.length, 2 ** 31 - 1])
                refuses(
                    replaced(3, [{...logits(), outputs: Int32Array.of(index)}]),
                    new RegExp(`groups\\[0\\]\\.outputs: batch index ${index} is outside the batch`)
                );
            refuses(
                replaced(3, [logits(), {...logits(), outputs: Int32Array.of(0)}]),
                /groups\[1\]\.outputs: batch index 0 is outside the batch or in two groups/
            );
            refuses(replaced(3, [{...logits(), destination: undefined}]), /groups\[0\]\.destination must be a typed array/);
            refuses(replaced(3, [{...logits(), destination: [0, 0]}]), /groups\[0\]\.destination must be a typed array/);
            refuses(
                replaced(3, [{...logits(), destination: new Int32Array(vocabulary)}]),
                /groups\[0\]\.destination must be a Float32Array or Float64Array/
            );
            refuses(
                replaced(3, [{...logits(), destination: new Float32Array(vocabulary - 1)}]),
                /groups\[0\]\.destination holds \d+ elements, fewer than/
            );
            refuses(replaced(3, [{...logits(2), destination: new Float64Array(vocabulary)}]), /groups\[0\]\.destination holds/);
            refuses(
                replaced(3, [{outputs: Int32Array.of(0), mode: NativeOutputMode.Argmax, destination: new Float32Array(1)}]),
                /groups\[0\]\.destination must be an Int32Array/
            );
            refuses(
                replaced(3, [{outputs: Int32Array.of(0, 1), mode: NativeOutputMode.Argmax, destination: new Int32Array(1)}]),
                /groups\[0\]\.destination holds 1 elements/
            );
            const distribution = {
                outputs: Int32Array.of(0),
                mode: NativeOutputMode.Distribution,
                destination: new Float64Array(2 * vocabulary),
                sampling: {temperature: 1, topK: 0, topP: 1, minP: 0}
            };
            refuses(
                replaced(3, [{...distribution, destination: new Float32Array(2 * vocabulary)}]),
                /groups\[0\]\.destination must be a Float64Array/
            );
            refuses(replaced(3, [{...distribution, destination: new Float64Array(vocabulary)}]), /groups\[0\]\.destination holds/);
            refuses(replaced(3, [{...distribution, sampling: undefined}]), /groups\[0\]\.sampling must be an object/);
            // Probabilities: the sampler rows alone, outputs × vocabulary doubles, and the same sampling checks.
            const probabilities = {...distribution, mode: NativeOutputMode.Probabilities, destination: new Float64Array(vocabulary)};
            refuses(
                replaced(3, [{...probabilities, destination: new Float32Array(vocabulary)}]),
                /groups\[0\]\.destination must be a Float64Array/
            );
            refuses(replaced(3, [{...probabilities, destination: new Float64Array(vocabulary - 1)}]), /groups\[0\]\.destination holds/);
            refuses(replaced(3, [{...probabilities, sampling: undefined}]), /groups\[0\]\.sampling must be an object/);
            const sampling: Array<[Record<string, unknown>, RegExp]> = [
                [{temperature: Number.NaN}, /sampling\.temperature must be a finite number/],
                [{temperature: -1}, /sampling\.temperature must be a finite number/],
                [{temperature: Infinity}, /sampling\.temperature must be a finite number/],
                [{temperature: "1"}, /sampling\.temperature must be a number/],
                [{topK: -1}, /sampling\.topK must be in/],
                [{topK: 2.5}, /sampling\.topK must be an integer/],
                [{topP: 2}, /sampling\.topP must be a finite number in \[0, 1\]/],
                [{minP: Number.NaN}, /sampling\.minP must be a finite number/],
                [{limit: -1}, /sampling\.limit must be in/],
                [{limit: 2 ** 40}, /sampling\.limit must be in/]
            ];
            for (const [change, message] of sampling)
                refuses(replaced(3, [{...distribution, sampling: {...distribution.sampling, ...change}}]), message);
        });

        it("refuses malformed removals", () => {
            refuses(replaced(4, [0, 0]), /removals must be an Int32Array/);
            refuses(replaced(4, null), /removals must be an Int32Array/);
            refuses(replaced(4, Int32Array.of(0)), /removals must be \(sequence, from\) pairs/);
            refuses(replaced(4, Int32Array.of(0, 0, 1, 0)), /removals\[2\] = 1 is not one of this context's sequences/);
            refuses(replaced(4, Int32Array.of(-1, 0)), /removals\[0\] = -1/);
            refuses(replaced(4, Int32Array.of(0, -5)), /removals\[1\] must not be negative/);
        });

        it("refuses malformed shared pairs", () => {
            refuses(replaced(5, [0, 0]), /shared must be an Int32Array/);
            refuses(replaced(5, new Float32Array(2)), /shared must be an Int32Array/);
            refuses(replaced(5, Int32Array.of(0)), /shared must be \(batch index, sequence\) pairs/);
            refuses(replaced(5, Int32Array.of(prompt.length, 0)), new RegExp(`shared\\[0\\] = ${prompt.length} is not a batch index`));
            refuses(replaced(5, Int32Array.of(-1, 0)), /shared\[0\] = -1 is not a batch index/);
            refuses(replaced(5, Int32Array.of(0, 1)), /shared\[1\] = 1 is not one of this context's sequences/);
            refuses(replaced(5, Int32Array.of(0, -1)), /shared\[1\] = -1 is not one of this context's sequences/);
            refuses(replaced(5, Int32Array.of(2, 0)), /shared\[0\]: batch index 2 already has sequence 0/);
        });

        it("checks destinations after every getter of its arguments has run", () => {
            const buffer = new ArrayBuffer(4 * vocabulary);
            const detacher = {
                get outputs(): Int32Array {
                    structuredClone(buffer, {transfer: [buffer]});
                    return Int32Array.of(1);
                },
                mode: NativeOutputMode.None
            };
            refuses(
                replaced(3, [{outputs: Int32Array.of(0), mode: NativeOutputMode.Logits, destination: new Float32Array(buffer)}, detacher]),
                /groups\[0\]\.destination holds 0 elements/
            );
        });
    });

    it("checks removeTokens' arguments and never passes a foreign sequence to llama.cpp", () => {
        const removeTokens = (...args: unknown[]): unknown => call(context, "removeTokens", ...args);
        expect(() => removeTokens("0", 0, -1)).toThrow(/sequence must be a number/);
        for (const sequence of [1, -1, 2 ** 31, Number.NaN, Infinity])
            expect(() => removeTokens(sequence, 0, -1)).toThrow(/sequence must be/);
        for (const from of [-1, Number.NaN, 0.5, 2 ** 32, undefined]) expect(() => removeTokens(0, from, -1)).toThrow(/from must be/);
        for (const to of [-2, Number.NaN, 1.5, -Infinity, null]) expect(() => removeTokens(0, 0, to)).toThrow(/to must be/);
        expect(removeTokens(0, 0, -1)).toBe(true);
        expect(removeTokens(0, 5, 2)).toBe(true);
    });

    it("shares tokens and copies cells only between sequences of a unified cache", async () => {
        const unified = new addon.NativeContext(model, {...options, sequences: 2, unified: true});
        const separate = new addon.NativeContext(model, {...options, sequences: 2, unified: false});
        const positions = Int32Array.from(prompt, (_token, index) => index);
        /** Every prompt token on sequence 1 too. */
        const onBoth = Int32Array.from(Array.from(prompt).flatMap((_token, index) => [index, 1]));
        try {
            const copyTokens = (...args: unknown[]): unknown => call(unified, "copyTokens", ...args);
            expect(() => copyTokens("0", 1, 0, -1)).toThrow(/source must be a number/);
            for (const sequence of [-1, 2, 2 ** 31, Number.NaN]) {
                expect(() => copyTokens(sequence, 1, 0, -1)).toThrow(/source must be/);
                expect(() => copyTokens(0, sequence, 0, -1)).toThrow(/destination must be/);
            }
            for (const from of [-1, 0.5, undefined]) expect(() => copyTokens(0, 1, from, -1)).toThrow(/from must be/);
            for (const to of [-2, 1.5, null]) expect(() => copyTokens(0, 1, 0, to)).toThrow(/to must be/);
            expect(() => copyTokens(1, 1, 0, -1)).toThrow(/source and destination are the same sequence/);
            expect(() => copyTokens(0, 1, 5, 5)).toThrow(/to must be -1 or greater than from/);
            expect(() => separate.copyTokens(0, 1, 0, -1)).toThrow(/copyTokens needs a context with a unified KV cache/);
            expect(() => separate.decodeNow(prompt, new Int32Array(prompt.length), positions, [], undefined, onBoth)).toThrow(
                /shared: tokens of several sequences need a context with a unified KV cache/
            );

            // Both calls behave where they are allowed: the prompt decoded on sequences 0 and 1 at once,
            // sequence 0 dropped and given sequence 1's cells back, then sequence 1 dropped: sequence 0's
            // next row is exactly what a fresh context of the same shape gives.
            expect(() =>
                call(unified, "decodeNow", prompt, new Int32Array(prompt.length), positions, [], undefined, Int32Array.of(0, 1, 0, 1))
            ).toThrow(/shared\[2\]: batch index 0 already has sequence 1/);
            await unified.decode(prompt, new Int32Array(prompt.length), positions, [], undefined, onBoth);
            expect(unified.removeTokens(0, 0, -1)).toBe(true);
            expect(copyTokens(1, 0, 0, -1)).toBeUndefined();
            expect(unified.removeTokens(1, 0, -1)).toBe(true);
            const next = Int32Array.of(5);
            const destination = new Float32Array(vocabulary);
            await unified.decode(next, new Int32Array(1), Int32Array.of(prompt.length), [
                {outputs: Int32Array.of(0), mode: NativeOutputMode.Logits, destination}
            ]);
            const fresh = new addon.NativeContext(model, {...options, sequences: 2, unified: true});
            try {
                const expected = new Float32Array(vocabulary);
                await fresh.decode(prompt, new Int32Array(prompt.length), positions, []);
                await fresh.decode(next, new Int32Array(1), Int32Array.of(prompt.length), [
                    {outputs: Int32Array.of(0), mode: NativeOutputMode.Logits, destination: expected}
                ]);
                expect(Array.from(destination)).toEqual(Array.from(expected));
            } finally {
                fresh.dispose();
            }
        } finally {
            unified.dispose();
            separate.dispose();
        }
    });

    it("turns llama.cpp's refusals into errors", async () => {
        const fresh = new addon.NativeContext(model, options);
        try {
            expect(fresh.decodeNow(Int32Array.of(1, 2), new Int32Array(2), Int32Array.of(0, 1), [])).not.toBeNull();
            // Positions must continue the sequence: llama.cpp refuses a gap (with an error, not an assert).
            expect(() => fresh.decodeNow(Int32Array.of(3), new Int32Array(1), Int32Array.of(9), [])).toThrow(/llama_decode failed/);
            await expect(fresh.decode(Int32Array.of(3), new Int32Array(1), Int32Array.of(9), [])).rejects.toThrow(/llama_decode failed/);
        } finally {
            fresh.dispose();
        }
    });

    it("refuses a disposed context, and disposing twice is harmless", async () => {
        const disposed = new addon.NativeContext(model, options);
        disposed.dispose();
        disposed.dispose();
        expect(() => disposed.decodeNow(prompt, new Int32Array(prompt.length), new Int32Array(prompt.length), [])).toThrow(
            /the context is disposed/
        );
        expect(() => disposed.decode(prompt, new Int32Array(prompt.length), new Int32Array(prompt.length), [])).toThrow(
            /the context is disposed/
        );
        expect(() => disposed.removeTokens(0, 0, -1)).toThrow(/the context is disposed/);
        expect(() => disposed.clear()).toThrow(/the context is disposed/);
    });

    it("lets a decode in flight finish when its context is disposed of, and refuses KV edits while it runs", async () => {
        for (let round = 0; round < 20; round++) {
            const busy = new addon.NativeContext(model, options);
            const destination = new Float32Array(vocabulary);
            const pending = busy.decode(
                prompt,
                new Int32Array(prompt.length),
                Int32Array.from(prompt, (_token, index) => index),
                [{outputs: Int32Array.of(prompt.length - 1), mode: NativeOutputMode.Logits, destination}]
            );
            // The decode may not have started yet (then the edit happens first) or be running (then it is refused).
            try {
                if (round % 2 === 0) busy.clear();
                else busy.removeTokens(0, 0, -1);
            } catch (error) {
                expect((error as Error).message).toMatch(/(clear|removeTokens): a decode of this context is running/);
            }
            busy.dispose();
            busy.dispose();
            // Started before the dispose: it completes; not started: it is refused. Never freed under the worker.
            const outcome = await pending.then(
                () => "resolved",
                (error: Error) => error.message
            );
            expect(outcome).toMatch(/^resolved$|the context is disposed/);
            if (outcome === "resolved") expect(destination).toEqual(baseline);
        }
    });

    it("refuses a context disposed of by a getter of decode's own arguments", async () => {
        const victim = new addon.NativeContext(model, options);
        const group = {
            get outputs(): Int32Array {
                victim.dispose();
                return Int32Array.of(0);
            },
            mode: NativeOutputMode.Argmax,
            destination: new Int32Array(1)
        };
        expect(() =>
            victim.decodeNow(
                prompt,
                new Int32Array(prompt.length),
                Int32Array.from(prompt, (_token, index) => index),
                [group]
            )
        ).toThrow(/the context is disposed/);
        const other = new addon.NativeContext(model, options);
        const otherGroup = {
            get outputs(): Int32Array {
                other.dispose();
                return Int32Array.of(0);
            },
            mode: NativeOutputMode.Argmax,
            destination: new Int32Array(1)
        };
        await expect(
            other.decode(
                prompt,
                new Int32Array(prompt.length),
                Int32Array.from(prompt, (_token, index) => index),
                [otherGroup]
            )
        ).rejects.toThrow(/the context is disposed/);
    });

    it("keeps a model alive for its contexts when it is disposed of first", async () => {
        const early = new addon.NativeModel(familyTarget);
        const survivor = new addon.NativeContext(early, options);
        const inFlight = new addon.NativeContext(early, options);
        // A getter among the options disposes of the model: the context being created holds it already.
        const lateOptions = {
            ...options,
            get sequences(): number {
                early.dispose();
                return 1;
            }
        };
        const third = new addon.NativeContext(early, lateOptions);
        early.dispose();
        expect(() => early.tokenize("text", false)).toThrow(/the model is disposed/);
        expect(() => early.detokenize(Int32Array.of(1))).toThrow(/the model is disposed/);
        expect(() => early.vocabularySize).toThrow(/the model is disposed/);
        expect(() => new addon.NativeContext(early, options)).toThrow(/the model is disposed/);
        const positions = Int32Array.from(prompt, (_token, index) => index);
        const rows = [new Float32Array(vocabulary), new Float32Array(vocabulary), new Float32Array(vocabulary)];
        const group = (destination: Float32Array): Array<{outputs: Int32Array; mode: 1; destination: Float32Array}> => [
            {outputs: Int32Array.of(prompt.length - 1), mode: NativeOutputMode.Logits, destination}
        ];
        const pending = inFlight.decode(prompt, new Int32Array(prompt.length), positions, group(rows[1]!));
        await survivor.decode(prompt, new Int32Array(prompt.length), positions, group(rows[0]!));
        if (third.decodeNow(prompt, new Int32Array(prompt.length), positions, group(rows[2]!)) === null)
            await third.decode(prompt, new Int32Array(prompt.length), positions, group(rows[2]!));
        await pending;
        for (const row of rows) expect(row).toEqual(baseline);
        expect(survivor.removeTokens(0, 2, -1)).toBe(true);
        survivor.clear();
        for (const each of [survivor, inFlight, third]) each.dispose();
    });

    it("checks NativeGrammar's construction", () => {
        const NativeGrammar = addon.NativeGrammar as unknown as new (...args: unknown[]) => NativeGrammarHandle;
        const grammar = 'root ::= "ab"';
        for (const notAModel of [undefined, null, "model", {}, context, Object.create(prototypeOf(addon.NativeModel)) as object])
            expect(() => new NativeGrammar(notAModel, grammar)).toThrow(/model must be a NativeModel/);
        expect(() => new NativeGrammar(model)).toThrow(/grammar must be a string/);
        expect(() => new NativeGrammar(model, 5)).toThrow(/grammar must be a string/);
        expect(() => new NativeGrammar(model, grammar, 7)).toThrow(/root must be a string/);
        expect(() => new NativeGrammar(model, 'root ::= "a"\0x ::= "b"')).toThrow(/grammar must not contain NUL/);
        expect(() => new NativeGrammar(model, grammar, "ro\0ot")).toThrow(/root must not contain NUL/);
        expect(() => new NativeGrammar(model, "")).toThrow(/grammar must not be empty/);
        expect(() => new NativeGrammar(model, grammar, "")).toThrow(/root must not be empty/);
        expect(() => new NativeGrammar(model, "root ::= missing")).toThrow(/could not parse the grammar/);
        expect(() => new NativeGrammar(model, "root ::= [")).toThrow(/could not parse the grammar/);
        expect(() => new NativeGrammar(model, 'root ::= root "a"')).toThrow(/left recursion/);
        expect(() => new NativeGrammar(model, grammar, "start")).toThrow(/does not contain a 'start' symbol/);
        expect(() => new NativeGrammar(model, 'root ::= "a"{5000}')).toThrow(/could not parse the grammar/);
        expect(() => (addon.NativeGrammar as unknown as Loose)(model, grammar)).toThrow(/without 'new'/);
        const disposedModel = new addon.NativeModel(familyTarget);
        disposedModel.dispose();
        expect(() => new NativeGrammar(disposedModel, grammar)).toThrow(/the model is disposed/);
        const convert = addon.jsonSchemaToGrammar as unknown as Loose;
        expect(() => convert(5)).toThrow(/schema must be a string/);
        expect(() => convert("{")).toThrow(/schema is not valid JSON/);
        expect(() => convert("[".repeat(100_000))).toThrow(/nested deeper than 256 levels/);
        expect(() => convert('{"$ref": "#/a/b/c"}')).toThrow(/cannot resolve \$ref/);
        // A chain of references the converter would follow to the end of the stack.
        const chain = Object.fromEntries(Array.from({length: 20_000}, (_, index) => [`d${index}`, {$ref: `#/$defs/d${index + 1}`}]));
        expect(() => convert(JSON.stringify({$defs: chain, $ref: "#/$defs/d0"}))).toThrow(/more than 1000 \$ref keys/);
        expect(() => convert('{"type": "integer", "minimum": 1e300}')).not.toThrow(/unknown exception/);
    });

    it("checks NativeGrammar's arguments, and never lets llama.cpp see a token its grammar refuses", async () => {
        const a = model.tokenize("a", false)[0]!;
        const b = model.tokenize("b", false)[0]!;
        const eos = model.eosToken!;
        const grammar = new addon.NativeGrammar(model, 'root ::= "ab"');
        expect(grammar.vocabularySize).toBe(vocabulary);
        for (const token of [undefined, "1", null, {}])
            for (const method of ["allows", "accept"]) expect(() => call(grammar, method, token)).toThrow(/token must be a number/);
        for (const token of [-1, vocabulary, 1.5, Number.NaN, Infinity, 2 ** 31])
            for (const method of ["allows", "accept"]) expect(() => call(grammar, method, token)).toThrow(/token must be/);
        for (const row of [undefined, Array.from({length: vocabulary}, () => 0), new Float32Array(vocabulary), new Int32Array(vocabulary)])
            expect(() => call(grammar, "mask", row)).toThrow(/row must be a Float64Array/);
        expect(() => grammar.mask(new Float64Array(vocabulary - 1))).toThrow(/row holds \d+ entries; the vocabulary has/);
        expect(() => grammar.mask(new Float64Array(vocabulary + 1))).toThrow(/row holds/);
        const detached = new Float64Array(vocabulary);
        structuredClone(detached.buffer, {transfer: [detached.buffer]});
        expect(() => grammar.mask(detached)).toThrow(/row holds 0 entries/);
        // llama.cpp aborts on an end-of-generation token where its grammar cannot end, and corrupts its
        // state on any other refused token: both are refused before they reach it.
        expect(() => grammar.accept(eos)).toThrow(/is not allowed by the grammar here/);
        expect(() => grammar.accept(b)).toThrow(/is not allowed by the grammar here/);
        const row = new Float64Array(vocabulary);
        const masking = grammar.mask(row);
        // While a mask runs on its worker, the grammar refuses every other call.
        expect(() => grammar.accept(a)).toThrow(/the grammar is busy/);
        expect(() => grammar.mark()).toThrow(/the grammar is busy/);
        await masking;
        expect([...row.keys()].filter((id) => row[id] === 0)).toEqual([a]);
        // A row detached while its mask runs is refused when the result would be written back.
        const moved = new Float64Array(vocabulary);
        const movedMask = grammar.mask(moved);
        structuredClone(moved.buffer, {transfer: [moved.buffer]});
        await expect(movedMask).rejects.toThrow(/resized or detached while the grammar masked it/);
        expect(() => grammar.rewind()).toThrow(/no mark to rewind to/);
        grammar.mark();
        grammar.accept(a);
        grammar.rewind();
        expect(grammar.allows(b)).toBe(false);
        grammar.accept(a);
        grammar.accept(b);
        expect(() => grammar.accept(a)).toThrow(/is not allowed by the grammar here/);
        expect(grammar.allows(eos)).toBe(true);
        grammar.accept(eos);
        grammar.accept(eos);
        // A view of a larger buffer is masked in place, at its own offset.
        const buffer = new Float64Array(vocabulary + 3);
        await grammar.mask(buffer.subarray(3));
        expect(buffer.subarray(0, 3)).toEqual(new Float64Array(3));
        expect([...buffer.subarray(3).keys()].filter((id) => buffer[3 + id] === 0)).toEqual([eos]);
        const copy = grammar.clone();
        grammar.dispose();
        grammar.dispose();
        for (const method of ["allows", "accept", "mask", "clone"])
            expect(() => call(grammar, method, method === "mask" ? row : a)).toThrow(/the grammar is disposed/);
        expect(() => grammar.vocabularySize).toThrow(/the grammar is disposed/);
        expect(copy.allows(eos)).toBe(true);
        copy.dispose();
    });

    it("refuses foreign receivers for NativeGrammar's methods, and keeps a grammar's model alive", async () => {
        const grammarPrototype = prototypeOf(addon.NativeGrammar);
        const wrongReceiver = /Illegal invocation|this must be a/;
        for (const receiver of [{}, model, context, Object.create(grammarPrototype) as object]) {
            for (const method of ["allows", "accept", "mark", "rewind", "clone", "dispose"])
                expect(() => grammarPrototype[method]!.call(receiver, 1)).toThrow(wrongReceiver);
            expect(() => grammarPrototype.mask!.call(receiver, new Float64Array(vocabulary))).toThrow(wrongReceiver);
            expect(() => Object.getOwnPropertyDescriptor(grammarPrototype, "vocabularySize")!.get!.call(receiver)).toThrow(wrongReceiver);
        }
        const early = new addon.NativeModel(familyTarget);
        const grammar = new addon.NativeGrammar(early, 'root ::= "a"');
        const grafted = Object.setPrototypeOf(new addon.NativeModel(familyTarget), grammarPrototype) as NativeGrammarHandle;
        expect(() => grafted.allows(1)).toThrow(wrongReceiver);
        early.dispose();
        const copy = grammar.clone();
        grammar.dispose();
        const row = new Float64Array(vocabulary);
        await copy.mask(row);
        expect(row.filter((value) => value === 0)).toHaveLength(1);
        copy.dispose();
    });

    it("lets a grammar job co-own its model: disposing of the model meanwhile leaves the job's grammar whole", async () => {
        const own = new addon.NativeModel(familyTarget);
        const [a, b] = [own.tokenize("a", false)[0]!, own.tokenize("b", false)[0]!];
        const eos = own.eosToken!;
        // The model is disposed of before the job's thread has read its vocabulary; the grammar then reads it at every step.
        const building = addon.compileGrammar(own, 'root ::= "a" "b"', undefined, 4);
        own.dispose();
        expect(() => own.vocabularySize).toThrow(/the model is disposed/);
        expect(() => addon.compileGrammar(own, 'root ::= "a"', undefined, 4)).toThrow(/the model is disposed/);
        const grammar = await building;
        expect(grammar.vocabularySize).toBe(vocabulary);
        const row = new Float64Array(vocabulary);
        await grammar.mask(row);
        expect([...row.keys()].filter((id) => row[id] === 0)).toEqual([a]);
        grammar.accept(a);
        expect(grammar.allows(b)).toBe(true);
        grammar.accept(b);
        expect(grammar.allows(eos)).toBe(true);
        grammar.dispose();
        // A job of seconds on a model disposed of at once, nobody awaiting it, ends on its own; its grammar is freed.
        const abandoned = new addon.NativeModel(familyTarget);
        const late = addon.compileGrammar(abandoned, slowGrammar(14), undefined, 4);
        abandoned.dispose();
        expect(addon.grammarJobsRunning()).toBeGreaterThanOrEqual(1);
        (await late).dispose();
    });

    describe("saveSequence and restoreSequence", () => {
        const familyDraft = new URL("../../models/draft/model.gguf", import.meta.url).pathname;
        const positions = Int32Array.from(prompt, (_token, index) => index);
        const logitsOf = (destination: Float32Array): NativeOutputGroup[] => [
            {outputs: Int32Array.of(0), mode: NativeOutputMode.Logits, destination}
        ];
        /** The row after `next` on `on`'s sequence 0, which holds the prompt. */
        async function nextRow(on: NativeContextHandle, next = 5): Promise<Float32Array> {
            const row = new Float32Array(vocabulary);
            await on.decode(Int32Array.of(next), new Int32Array(1), Int32Array.of(prompt.length), logitsOf(row));
            return row;
        }
        async function withPrompt(): Promise<NativeContextHandle> {
            const fresh = new addon.NativeContext(model, options);
            await fresh.decode(prompt, new Int32Array(prompt.length), positions, []);
            return fresh;
        }

        it("checks their arguments", async () => {
            const save = (...args: unknown[]): unknown => call(context, "saveSequence", ...args);
            const restore = (...args: unknown[]): unknown => call(context, "restoreSequence", ...args);
            expect(() => save("0")).toThrow(/sequence must be a number/);
            expect(() => save()).toThrow(/sequence must be a number/);
            for (const sequence of [1, -1, 2 ** 31, Number.NaN, Infinity, 0.5]) {
                expect(() => save(sequence)).toThrow(/sequence must be/);
                expect(() => restore(sequence, new Uint8Array(16))).toThrow(/sequence must be/);
            }
            for (const notBytes of [undefined, null, "state", [1, 2], new Int8Array(16), new Uint8ClampedArray(16), new Uint16Array(8)])
                expect(() => restore(0, notBytes)).toThrow(/data must be a Uint8Array/);
            expect(() => restore(0, new DataView(new ArrayBuffer(16)))).toThrow(/data must be a Uint8Array/);
            const source = await withPrompt();
            try {
                const state = source.saveSequence(0);
                expect(state).toBeInstanceOf(Uint8Array);
                expect(() => source.restoreSequence(0, state)).not.toThrow();
            } finally {
                source.dispose();
            }
        });

        it("restores a state into another context exactly, replacing what it held", async () => {
            const source = await withPrompt();
            const target = new addon.NativeContext(model, options);
            try {
                const state = source.saveSequence(0);
                // The destination held other tokens, at other positions: they are gone after the restore.
                await target.decode(
                    Int32Array.of(9, 9, 9, 9, 9, 9, 9, 9, 9),
                    new Int32Array(9),
                    Int32Array.from({length: 9}, (_v, i) => i),
                    []
                );
                target.restoreSequence(0, state);
                expect(await nextRow(target)).toEqual(await nextRow(source));
                // An empty sequence's state empties the destination.
                source.clear();
                target.restoreSequence(0, source.saveSequence(0));
                const row = new Float32Array(vocabulary);
                await target.decode(Int32Array.of(prompt[0]!), new Int32Array(1), Int32Array.of(0), logitsOf(row));
            } finally {
                source.dispose();
                target.dispose();
            }
        });

        it("refuses data that is not a state of this model, and survives it", async () => {
            const source = await withPrompt();
            const target = await withPrompt();
            const draft = new addon.NativeModel(familyDraft);
            const foreign = new addon.NativeContext(draft, options);
            try {
                const state = source.saveSequence(0);
                const view = new DataView(state.buffer, state.byteOffset, state.byteLength);
                const edited = (edit: (bytes: DataView) => void): Uint8Array => {
                    const copy = state.slice();
                    edit(new DataView(copy.buffer));
                    return copy;
                };
                const cells = view.getUint32(12, true);
                expect(cells).toBe(prompt.length);
                const refusals: Array<[Uint8Array, RegExp]> = [
                    [new Uint8Array(0), /not a sequence state/],
                    [new Uint8Array(7), /not a sequence state/],
                    [edited((bytes) => bytes.setUint32(0, 0x12345678, true)), /not a sequence state/],
                    [state.subarray(0, 10), /too short/],
                    [edited((bytes) => bytes.setUint32(8, 0, true)), /KV streams/],
                    [edited((bytes) => bytes.setUint32(8, 0xffffffff, true)), /KV streams/],
                    [edited((bytes) => bytes.setUint32(12, 0xffffffff, true)), /more than the \d+ of a KV stream/],
                    [state.subarray(0, 16 + 12 * 2), /ends inside its cells/],
                    [edited((bytes) => bytes.setInt32(16, -1, true)), /is not a cell of one sequence/],
                    [edited((bytes) => bytes.setInt32(16 + 12, 2 ** 30, true)), /is not a cell of one sequence/],
                    [edited((bytes) => bytes.setUint32(16 + 4, 2, true)), /is not a cell of one sequence/]
                ];
                for (const [data, message] of refusals) {
                    expect(() => target.restoreSequence(0, data)).toThrow(message);
                    // Checked before anything is touched: the sequence still holds the prompt.
                    expect(await nextRow(target)).toEqual(await nextRow(source));
                    target.removeTokens(0, prompt.length, -1);
                    source.removeTokens(0, prompt.length, -1);
                }
                // Cut inside the K/V rows, or another model's (other row sizes): llama.cpp refuses, the sequence is emptied.
                await foreign.decode(prompt, new Int32Array(prompt.length), positions, []);
                for (const data of [state.subarray(0, state.length - 100), foreign.saveSequence(0)]) {
                    expect(() => target.restoreSequence(0, data)).toThrow(/llama.cpp refused the state/);
                    const row = new Float32Array(vocabulary);
                    await target.decode(Int32Array.of(prompt[0]!), new Int32Array(1), Int32Array.of(0), logitsOf(row));
                    target.clear();
                }
            } finally {
                source.dispose();
                target.dispose();
                foreign.dispose();
                draft.dispose();
            }
        });

        it("refuses to save or restore while a decode of the context runs, and never waits", async () => {
            const source = await withPrompt();
            const state = source.saveSequence(0);
            try {
                for (let round = 0; round < 20; round++) {
                    const busy = new addon.NativeContext(model, options);
                    const pending = busy.decode(prompt, new Int32Array(prompt.length), positions, []);
                    try {
                        if (round % 2 === 0) busy.saveSequence(0);
                        else busy.restoreSequence(0, state);
                    } catch (error) {
                        expect((error as Error).message).toMatch(/(saveSequence|restoreSequence): a decode of this context is running/);
                    }
                    await pending.catch(() => undefined);
                    busy.dispose();
                    expect(() => busy.saveSequence(0)).toThrow(/the context is disposed/);
                    expect(() => busy.restoreSequence(0, state)).toThrow(/the context is disposed/);
                }
            } finally {
                source.dispose();
            }
        });
    });

    it("is alive at the end, and decodes as it did at the start", async () => {
        expect(await promptLogits()).toEqual(baseline);
        const result = context.decodeNow(
            prompt,
            new Int32Array(prompt.length),
            Int32Array.from(prompt, (_token, index) => index),
            [{outputs: Int32Array.of(prompt.length - 1), mode: NativeOutputMode.Argmax, destination: new Int32Array(1)}]
        );
        expect(result === null || typeof result.decodeMilliseconds === "number").toBe(true);
        expect(addon.backendInfo().build).toBe("cpu");
    });
});
