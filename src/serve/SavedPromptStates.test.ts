import {describe, expect, it} from "vitest";
import {SavedPromptStates} from "./SavedPromptStates.js";

const state = (tokens: number[], bytes = 100) => ({tokens, data: new Uint8Array(bytes)});

describe("SavedPromptStates", () => {
    it("finds the tenant's state sharing the longest prefix, never another tenant's", () => {
        const states = new SavedPromptStates(1000);
        states.add("a", state([1, 2, 3, 4]));
        states.add("a", state([1, 2, 9]));
        states.add("b", state([1, 2, 3, 4, 5, 6]));
        expect(states.longestMatch("a", [1, 2, 3, 4, 5, 6, 7])).toMatchObject({length: 4, state: {tokens: [1, 2, 3, 4]}});
        expect(states.longestMatch("a", [1, 2, 9, 9])).toMatchObject({length: 3});
        expect(states.longestMatch("c", [1, 2, 3])).toEqual({state: undefined, length: 0});
    });

    it("keeps at most its bytes, dropping the least recently used, and drops states a newer one extends", () => {
        const states = new SavedPromptStates(250);
        states.add("a", state([1, 2]));
        states.add("a", state([5, 6]));
        states.longestMatch("a", [1, 2]); // [1, 2] is now the more recently used
        states.add("a", state([7, 8]));
        expect(states.count).toBe(2);
        expect(states.bytes).toBe(200);
        expect(states.longestMatch("a", [5, 6]).length).toBe(0);
        expect(states.longestMatch("a", [1, 2]).length).toBe(2);
        states.add("a", state([1, 2, 3]));
        expect(states.count).toBe(2);
        expect(states.covers("a", [1, 2])).toBe(true);
        expect(states.covers("b", [1, 2])).toBe(false);
        // A state larger than the whole budget is not kept.
        states.add("a", state([4], 300));
        expect(states.count).toBe(2);
    });

    it("holds at most its bytes through a long run of distinct prompts from several tenants, keeping the latest", () => {
        const states = new SavedPromptStates(10_000);
        let peak = 0;
        for (let prompt = 0; prompt < 2000; prompt++) {
            const tenant = `key-${prompt % 3}`;
            states.add(tenant, state([prompt, prompt + 1, prompt + 2], 300 + (prompt % 7) * 100));
            peak = Math.max(peak, states.bytes);
            // A prompt that recurs keeps its state in use: the LRU rule spares it.
            expect(states.longestMatch("key-0", [0, 1, 2]).length, `after prompt ${prompt}`).toBe(3);
        }
        expect(peak).toBeLessThanOrEqual(10_000);
        expect(states.count).toBeLessThanOrEqual(10_000 / 300);
        expect(states.longestMatch("key-1", [1999, 2000, 2001]).length).toBe(3);
        expect(states.longestMatch("key-0", [3, 4, 5]).length).toBe(0);
    });
});
