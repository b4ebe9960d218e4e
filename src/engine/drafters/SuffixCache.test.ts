import {describe, expect, it} from "vitest";
import {InvalidDrafterError} from "../../errors.js";
import {Random} from "../../random/Random.js";
import {defaultMaxDocuments, SuffixCache} from "./SuffixCache.js";

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

    it("agrees with a brute-force count of the live documents' substrings through many insertions and evictions", () => {
        const random = new Random(3);
        const depth = 5;
        const maxNodes = 60;
        const cache = new SuffixCache({depth, maxNodes});
        const live: number[][] = [];
        const prefixCount = (path: readonly number[]) => {
            let total = 0;
            for (const document of live)
                for (let start = 0; start + path.length <= document.length; start++)
                    if (path.every((token, offset) => document[start + offset] === token)) total++;
            return total;
        };
        const distinctSubstrings = () => {
            const seen = new Set<string>();
            for (const document of live)
                for (let start = 0; start < document.length; start++)
                    for (let end = start + 1; end <= Math.min(document.length, start + depth); end++)
                        seen.add(document.slice(start, end).join(","));
            return seen.size;
        };
        const bruteLookup = (context: readonly number[], maxTokens: number, minCount: number, minMatch: number) => {
            for (let length = Math.min(Math.floor(depth / 2), context.length); length >= minMatch; length--) {
                const path = context.slice(context.length - length);
                if (prefixCount(path) === 0) continue;
                const proposal: number[] = [];
                const room = Math.min(maxTokens, depth - length, length - minMatch + 1);
                while (proposal.length < room) {
                    const here = prefixCount([...path, ...proposal]);
                    let best = -1;
                    let bestCount = 0;
                    for (let token = 0; token < 5; token++) {
                        const count = [...path, ...proposal].length < depth ? prefixCount([...path, ...proposal, token]) : 0;
                        if (count > bestCount) [best, bestCount] = [token, count];
                    }
                    if (best < 0 || bestCount < minCount || 10 * bestCount < here) break;
                    proposal.push(best);
                }
                if (proposal.length > 0) return proposal;
            }
            return [];
        };
        for (let step = 0; step < 300; step++) {
            const document = Array.from({length: 1 + Math.floor(random.nextDouble() * 12)}, () => Math.floor(random.nextDouble() * 5));
            cache.insert(document);
            live.push(document);
            while (distinctSubstrings() > maxNodes) live.shift();
            expect(cache.nodeCount).toBe(distinctSubstrings());
            expect(cache.documentCount).toBe(live.length);
            for (let probe = 0; probe < 4; probe++) {
                const context = Array.from({length: 1 + Math.floor(random.nextDouble() * 4)}, () => Math.floor(random.nextDouble() * 5));
                const minCount = 1 + Math.floor(random.nextDouble() * 2);
                const minMatch = 1 + Math.floor(random.nextDouble() * 2);
                expect(cache.lookup(context, 4, minCount, minMatch)).toEqual(bruteLookup(context, 4, minCount, minMatch));
            }
        }
        expect(cache.evictions).toBeGreaterThan(100);
        // Slots are reused: the arrays grew to what one insertion past the bound needs, not with the 300 documents.
        expect(cache.allocatedNodes).toBeLessThanOrEqual(256);
    });

    it("keeps at most maxDocuments outputs, dropping the oldest, even when identical outputs add no nodes", () => {
        const cache = new SuffixCache({depth: 8, maxNodes: 100_000, maxDocuments: 50});
        const output = [1, 2, 3, 4, 5, 6];
        for (let copy = 0; copy < 1000; copy++) cache.insert(output);
        expect(cache.documentCount).toBe(50);
        expect(cache.evictions).toBe(950);
        // The counts are those of the 50 copies kept: a continuation seen 50 times passes MIN_COUNT 50, not 51.
        expect(cache.lookup([1, 2, 3], 2, 50)).toEqual([4, 5]);
        expect(cache.lookup([1, 2, 3], 2, 51)).toEqual([]);
        // First in, first out: after 50 newer outputs, the identical ones are all gone.
        for (let document = 0; document < 50; document++) cache.insert([100 + document, 200 + document]);
        expect(cache.documentCount).toBe(50);
        expect(cache.lookup([1, 2, 3], 2, 1)).toEqual([]);
        expect(cache.lookup([149], 1, 1)).toEqual([249]);
    });

    it("keeps defaultMaxDocuments outputs when no document bound is given", () => {
        const cache = new SuffixCache({depth: 4, maxNodes: 1000});
        for (let copy = 0; copy < defaultMaxDocuments + 10; copy++) cache.insert([7, 8, 9]);
        expect(cache.documentCount).toBe(defaultMaxDocuments);
        expect(cache.nodeCount).toBe(6);
    });

    it("rejects bad options", () => {
        expect(() => new SuffixCache({depth: 1, maxNodes: 10})).toThrow(InvalidDrafterError);
        expect(() => new SuffixCache({depth: 4, maxNodes: 0})).toThrow(InvalidDrafterError);
        expect(() => new SuffixCache({depth: 4, maxNodes: 10, maxDocuments: 0})).toThrow(InvalidDrafterError);
        expect(() => new SuffixCache({depth: 4, maxNodes: 10, maxDocuments: 2.5})).toThrow(InvalidDrafterError);
    });
});
