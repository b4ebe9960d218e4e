import {describe, expect, it} from "vitest";
import {repetitivePrompts} from "./repetitivePrompts.js";

describe("repetitivePrompts", () => {
    it("builds the same sessions, rewrites and drills every time, perKind of each kind", () => {
        const prompts = repetitivePrompts(4);
        expect(prompts).toEqual(repetitivePrompts(4));
        expect(prompts.map((prompt) => prompt.kind)).toEqual([
            ...Array(4).fill("tool-session"),
            ...Array(4).fill("json-rewrite"),
            ...Array(4).fill("copy-drill")
        ]);
        expect(new Set(prompts.map((prompt) => prompt.prompt)).size).toBe(12);
        const toolNames = (text: string) => [...text.matchAll(/"name":"(\w+)"/g)].map((match) => match[1]);
        for (const prompt of prompts) {
            const documents = prompt.prompt.split("\n\n");
            if (prompt.kind === "copy-drill") {
                expect(documents).toHaveLength(4);
                for (const document of documents.slice(0, 3)) {
                    const [repeat, echo] = document.split("\nEcho:");
                    expect(echo.trim()).toBe(repeat.replace("Repeat: ", "").trim());
                }
                expect(documents[3]).toMatch(/^Repeat: .+\nEcho:$/);
            } else {
                expect(documents).toHaveLength(2);
                expect(documents[0]).toMatch(/^Request: .+\nCall: \{.+\}$/);
                expect(documents[1]).toMatch(/^Request: .+\nCall:$/);
                // A rewrite asks the earlier tool again with other values; a session asks another tool.
                const earlierTool = toolNames(documents[0])[0];
                expect(earlierTool).toBeDefined();
                if (prompt.kind === "json-rewrite") expect(documents[1]).not.toBe(documents[0].split("\nCall:")[0] + "\nCall:");
            }
            // Short enough for 80 generated tokens in the family's 256-token context (at most 1 token per byte).
            expect(new TextEncoder().encode(prompt.prompt).length).toBeLessThanOrEqual(168);
        }
    });
});
