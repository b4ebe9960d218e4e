import {describe, expect, it, vi} from "vitest";
import {NativeBackend} from "../backend/NativeBackend.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {detokenizerCleansSpaces} from "./detokenizerCleansSpaces.js";
import {StopDetector} from "./StopDetector.js";

vi.setConfig(modelTestTimeouts);

describe("detokenizerCleansSpaces on the shipped family", () => {
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
});
