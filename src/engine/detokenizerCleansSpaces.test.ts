import {describe, expect, it} from "vitest";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {NativeBackend} from "../backend/NativeBackend.js";
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

    it("the shipped family's tokenizer keeps its spaces, so a space token streams at once", async () => {
        const target = await NativeBackend.load(new URL("../../models/target/model.gguf", import.meta.url).pathname, {contextSize: 64});
        try {
            expect(detokenizerCleansSpaces(target)).toBe(false);
            const detector = new StopDetector({
                endTokens: new Set(),
                maxTokens: 8,
                stop: [],
                decode: (tokens) => target.detokenize(tokens),
                holdSpaces: false
            });
            expect(detector.accept(target.tokenize("a ")).text).toBe("a ");
        } finally {
            await target.dispose();
        }
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
