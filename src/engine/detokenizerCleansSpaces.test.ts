import {describe, expect, it} from "vitest";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {detokenizerCleansSpaces} from "./detokenizerCleansSpaces.js";
import {StopDetector} from "./StopDetector.js";

/** A character-level tokenizer whose detokenizer may drop a space before punctuation, as llama.cpp's clean_spaces does. */
function characterBackend(cleans: boolean): ModelBackend {
    return {
        tokenize: (text: string) => Array.from(text, (character) => character.codePointAt(0)!),
        detokenize: (tokens: readonly number[]) => {
            const text = String.fromCodePoint(...tokens);
            return cleans ? text.replace(/ ([,.?!])/g, "$1") : text;
        }
    } as unknown as ModelBackend;
}

describe("detokenizerCleansSpaces", () => {
    it("tells a detokenizer that drops a space before punctuation from one that keeps every space", () => {
        expect(detokenizerCleansSpaces(characterBackend(true))).toBe(true);
        expect(detokenizerCleansSpaces(characterBackend(false))).toBe(false);
    });

    it("with spaces held, the same text waits for what follows the space", () => {
        const backend = characterBackend(true);
        const detector = new StopDetector({endTokens: new Set(), maxTokens: 8, stop: [], decode: (tokens) => backend.detokenize(tokens)});
        expect(detector.accept(backend.tokenize("a ")).text).toBe("a");
        // The detokenizer took the space back: it was never streamed.
        expect(detector.accept(backend.tokenize(",")).text).toBe(",");
        expect(detector.text).toBe("a,");
    });
});
