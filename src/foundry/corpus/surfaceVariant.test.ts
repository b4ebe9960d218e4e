import {describe, expect, it} from "vitest";
import {Random} from "../../random/Random.js";
import {surfaceVariant} from "./surfaceVariant.js";

describe("surfaceVariant", () => {
    it("writes every combination of the arithmetic forms and keeps the final line", () => {
        const answer = " 3 * 4 = 12, 12 - 5 = 7\n#### 7";
        const forms = new Set<string>();
        const random = new Random(3);
        for (let draw = 0; draw < 400; draw++) forms.add(surfaceVariant("arithmetic", answer, random, 0.5));
        expect([...forms].sort()).toEqual([
            " 3 * 4 = 12, 12 - 5 = 7\n#### 7",
            " 3 * 4 = 12; 12 - 5 = 7\n#### 7",
            " 3 × 4 = 12, 12 - 5 = 7\n#### 7",
            " 3 × 4 = 12; 12 - 5 = 7\n#### 7",
            " 3*4=12, 12-5=7\n#### 7",
            " 3*4=12; 12-5=7\n#### 7",
            " 3×4=12, 12-5=7\n#### 7",
            " 3×4=12; 12-5=7\n#### 7"
        ].sort());
    });

    it("writes a tool call with and without spaces after colons and commas, keys in order", () => {
        const answer = ' {"name":"set_timer","arguments":{"minutes":5,"label":"tea"}}';
        const forms = new Set<string>();
        const random = new Random(4);
        for (let draw = 0; draw < 200; draw++) forms.add(surfaceVariant("tool-call", answer, random, 0.5));
        expect([...forms].sort()).toEqual([
            ' {"name":"set_timer","arguments":{"minutes":5,"label":"tea"}}',
            ' {"name":"set_timer", "arguments":{"minutes":5, "label":"tea"}}',
            ' {"name": "set_timer","arguments": {"minutes": 5,"label": "tea"}}',
            ' {"name": "set_timer", "arguments": {"minutes": 5, "label": "tea"}}'
        ].sort());
    });

    it("keeps the canonical form at probability 0, other tasks always, and takes every alternative at 1", () => {
        const random = new Random(5);
        expect(surfaceVariant("arithmetic", " 2 + 3 = 5\n#### 5", random, 0)).toBe(" 2 + 3 = 5\n#### 5");
        expect(surfaceVariant("arithmetic", " 2 * 3 = 6\n#### 6", random, 1)).toBe(" 2×3=6\n#### 6");
        expect(surfaceVariant("story", " It is red, and small.", random, 1)).toBe(" It is red, and small.");
    });
});
