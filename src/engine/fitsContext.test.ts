import {describe, expect, it} from "vitest";
import {PromptExceedsContextError} from "../errors.js";
import {contextRefusal, fitsContext, mostSkipped} from "./fitsContext.js";

describe("the context rule", () => {
    it("fits a prompt when it and the tokens asked for fit the context together", () => {
        expect(fitsContext(200, 56, 256)).toBe(true);
        expect(fitsContext(201, 56, 256)).toBe(false);
        expect(fitsContext(0, 256, 256)).toBe(true);
    });

    it("calls a run insufficient only when more than half its items were skipped", () => {
        expect(mostSkipped(2, 4)).toBe(false);
        expect(mostSkipped(3, 5)).toBe(true);
        expect(mostSkipped(0, 0)).toBe(false);
        expect(mostSkipped(1, 1)).toBe(true);
    });

    it("refuses with OpenAI's code, naming the field, the prompt's tokens, the tokens asked for and the context", () => {
        const error = contextRefusal(300, 32, 256, "item-7");
        expect(error).toBeInstanceOf(PromptExceedsContextError);
        expect(error).toMatchObject({code: "context_length_exceeded", field: "item-7", promptTokens: 300, contextSize: 256});
        expect(error.message).toBe("item-7: has 300 tokens; with 32 generated tokens that is more than the 256-token context");
    });
});
