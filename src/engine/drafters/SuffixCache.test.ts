import {describe, expect, it} from "vitest";
import {InvalidDrafterError} from "../../errors.js";
import {SuffixCache} from "./SuffixCache.js";

describe("SuffixCache", () => {
    it("proposes the continuation seen after the longest matching context", () => {
        const cache = new SuffixCache({depth: 8, maxNodes: 10_000});
        cache.insert([1, 2, 3, 4, 5, 6]);
        // A context match of m tokens proposes at most m − minMatch + 1: [2, 3] (m = 2) proposes 2.
        expect(cache.lookup([9, 9, 2, 3], 3, 1)).toEqual([4, 5]);
        expect(cache.lookup([9, 1, 2, 3], 5, 1)).toEqual([4, 5, 6]);
        expect(cache.lookup([9, 1, 2, 3], 5, 1, 2)).toEqual([4, 5]);
        expect(cache.lookup([9, 9, 2, 3], 1, 1)).toEqual([4]);
        // A match shorter than minMatch proposes nothing.
        expect(cache.lookup([9, 9, 2, 3], 3, 1, 3)).toEqual([]);
        expect(cache.lookup([9, 8, 7], 3, 1)).toEqual([]);
        // The longer context wins: 3 alone is followed by 4 in the first document, [7, 3] by 8 in the second.
        cache.insert([7, 3, 8]);
        expect(cache.lookup([7, 3], 1, 1)).toEqual([8]);
        expect(cache.lookup([5, 3], 1, 1)).toEqual([4]);
    });

    it("applies the frequency threshold to each proposed token", () => {
        const cache = new SuffixCache({depth: 8, maxNodes: 10_000});
        cache.insert([1, 2, 3, 4]);
        expect(cache.lookup([1, 2], 2, 2)).toEqual([]);
        cache.insert([1, 2, 3, 5]);
        // [1, 2] → 3 seen twice; 3 → 4 and 3 → 5 once each, below the threshold of 2.
        expect(cache.lookup([1, 2], 2, 2)).toEqual([3]);
        cache.insert([1, 2, 3, 5]);
        expect(cache.lookup([1, 2], 2, 2)).toEqual([3, 5]);
    });

    it("stays within its node bound by dropping the oldest outputs", () => {
        const cache = new SuffixCache({depth: 6, maxNodes: 200});
        let peak = 0;
        for (let document = 0; document < 200; document++) {
            cache.insert(Array.from({length: 20}, (_value, index) => (document * 7 + index * 13) % 97));
            peak = Math.max(peak, cache.nodeCount);
        }
        expect(peak).toBeLessThanOrEqual(200);
        expect(cache.evictions).toBeGreaterThan(0);
        expect(cache.documentCount).toBeGreaterThan(0);
        // The newest document is still there; the first one is gone.
        const newest = Array.from({length: 20}, (_value, index) => (199 * 7 + index * 13) % 97);
        expect(cache.lookup(newest.slice(0, 3), 2, 1)).toEqual(newest.slice(3, 5));
        const first = Array.from({length: 20}, (_value, index) => (index * 13) % 97);
        expect(cache.lookup(first.slice(0, 3), 2, 1)).not.toEqual(first.slice(3, 5));
    });

    it("frees every node when all documents are evicted, and counts nodes exactly", () => {
        const cache = new SuffixCache({depth: 3, maxNodes: 1000});
        cache.insert([1, 2, 3]);
        // Windows [1,2,3], [2,3], [3]: nodes 1, 1→2, 1→2→3, 2, 2→3, 3.
        expect(cache.nodeCount).toBe(6);
        cache.insert([1, 2, 4]);
        expect(cache.nodeCount).toBe(9);
        const tiny = new SuffixCache({depth: 3, maxNodes: 5});
        tiny.insert([1, 2, 3]);
        expect(tiny.nodeCount).toBe(0);
        expect(tiny.documentCount).toBe(0);
    });

    it("rejects bad options", () => {
        expect(() => new SuffixCache({depth: 1, maxNodes: 10})).toThrow(InvalidDrafterError);
        expect(() => new SuffixCache({depth: 4, maxNodes: 0})).toThrow(InvalidDrafterError);
    });
});
