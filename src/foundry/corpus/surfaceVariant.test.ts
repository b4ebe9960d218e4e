import {describe, expect, it} from "vitest";
import {Random} from "../../random/Random.js";
import {surfaceVariant} from "./surfaceVariant.js";

/** Every distinct form of `answer` in `draws` draws at probability 0.5, sorted. */
function formsDrawn(task: "arithmetic" | "tool-call", answer: string, seed: number, draws: number): string[] {
    const forms = new Set<string>();
    const random = new Random(seed);
    for (let draw = 0; draw < draws; draw++) forms.add(surfaceVariant(task, answer, random, 0.5));
    return [...forms].sort();
}

describe("surfaceVariant", () => {
    it("writes every combination of the arithmetic forms and keeps the final line", () => {
        expect(formsDrawn("arithmetic", " 3 * 4 = 12, 12 - 5 = 7\n#### 7", 3, 400)).toEqual(
            [
                " 3 * 4 = 12, 12 - 5 = 7\n#### 7",
                " 3 * 4 = 12; 12 - 5 = 7\n#### 7",
                " 3 × 4 = 12, 12 - 5 = 7\n#### 7",
                " 3 × 4 = 12; 12 - 5 = 7\n#### 7",
                " 3*4=12, 12-5=7\n#### 7",
                " 3*4=12; 12-5=7\n#### 7",
                " 3×4=12, 12-5=7\n#### 7",
                " 3×4=12; 12-5=7\n#### 7"
            ].sort()
        );
    });

    it("writes a tool call with and without spaces after colons and commas, keys in order", () => {
        expect(formsDrawn("tool-call", ' {"name":"set_timer","arguments":{"minutes":5,"label":"tea"}}', 4, 200)).toEqual(
            [
                ' {"name":"set_timer","arguments":{"minutes":5,"label":"tea"}}',
                ' {"name":"set_timer", "arguments":{"minutes":5, "label":"tea"}}',
                ' {"name": "set_timer","arguments": {"minutes": 5,"label": "tea"}}',
                ' {"name": "set_timer", "arguments": {"minutes": 5, "label": "tea"}}'
            ].sort()
        );
    });

    it("keeps the canonical form at probability 0, other tasks always, and takes every alternative at 1", () => {
        const random = new Random(5);
        expect(surfaceVariant("arithmetic", " 2 + 3 = 5\n#### 5", random, 0)).toBe(" 2 + 3 = 5\n#### 5");
        expect(surfaceVariant("arithmetic", " 2 * 3 = 6\n#### 6", random, 1)).toBe(" 2×3=6\n#### 6");
        expect(surfaceVariant("story", " It is red, and small.", random, 1)).toBe(" It is red, and small.");
    });
});
