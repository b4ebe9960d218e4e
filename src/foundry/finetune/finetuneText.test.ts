import {describe, expect, it, vi} from "vitest";
import {InvalidInputError} from "../../errors.js";
import {finetuneText} from "./finetuneText.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

const countTokens = (text: string): number => Buffer.byteLength(text, "utf8");
const train = Array.from({length: 50}, (_, index) => `Question: ${index} + 1?\nAnswer: ${index + 1}`);
const validation = Array.from({length: 20}, (_, index) => `Frage: ${index} + 2?\nAntwort: ${index + 2}`);

/** llama-finetune's own arithmetic: windows of n_ctx at stride n_ctx/2, split = int64(windows × (1 − val)) in float32. */
function llamaCppSplit(tokens: number, context: number, validationSplit: number): {windows: number; train: number} {
    const windows = Math.floor((tokens - context - 1) / (context / 2));
    return {windows, train: Math.trunc(Math.fround(windows * Math.fround(1 - Math.fround(validationSplit))))};
}

describe("finetuneText", () => {
    it("puts exactly the training windows before the validation documents", () => {
        const layout = finetuneText(train, validation, {contextLength: 32, countTokens});
        expect(layout.trainDocuments).toBe(train.length);
        expect(layout.tokens).toBe(1 + countTokens(layout.text));
        const split = llamaCppSplit(layout.tokens, 32, layout.validationSplit);
        expect(split.train).toBe(layout.trainWindows);
        expect(split.windows - split.train).toBe(layout.validationWindows);
        // The last training window (tokens [start, start + 33)) ends before the first validation token.
        const validationStart = 1 + countTokens(layout.text.slice(0, layout.text.indexOf(validation[0])));
        expect((layout.trainWindows - 1) * 16 + 33).toBeLessThanOrEqual(validationStart);
        expect(layout.trainWindows * 16 + 33).toBeGreaterThan(validationStart);
    });

    it("cycles or cuts the training documents to a window budget", () => {
        const long = finetuneText(train, validation, {contextLength: 32, trainWindows: 400, countTokens});
        expect(long.trainDocuments).toBeGreaterThan(train.length);
        expect(long.trainWindows).toBeGreaterThanOrEqual(400);
        expect(long.trainWindows).toBeLessThan(404);
        const short = finetuneText(train, validation, {contextLength: 32, trainWindows: 10, countTokens});
        expect(short.trainDocuments).toBeLessThan(train.length);
        expect(llamaCppSplit(short.tokens, 32, short.validationSplit).train).toBe(short.trainWindows);
    });

    it("rejects layouts llama-finetune could not train on", () => {
        expect(() => finetuneText([], validation, {contextLength: 32, countTokens})).toThrow(InvalidInputError);
        expect(() => finetuneText(train, ["x"], {contextLength: 32, countTokens})).toThrow(/validation/);
        expect(() => finetuneText(train, validation, {contextLength: 31, countTokens})).toThrow(/even/);
    });
});
