import {describe, expect, it} from "vitest";
import {ngramLookup} from "./ngramLookup.js";

describe("ngramLookup", () => {
    it("takes the longest n-gram in range that recurs, before shorter ones", () => {
        // Tail [7, 8, 9]: the 3-gram recurs at index 4 (followed by 20, 21); the 1-gram 9 recurs later at index 10 (followed by 30).
        const history = [1, 2, 3, 4, 7, 8, 9, 20, 21, 5, 9, 30, 7, 8, 9];
        expect(ngramLookup(history, 1, 3, 2)).toEqual([20, 21]);
        // Limited to n ≤ 1, the most recent occurrence of 9 wins.
        expect(ngramLookup(history, 1, 1, 2)).toEqual([30, 7]);
    });

    it("among occurrences of one n-gram takes the most recent", () => {
        const history = [5, 6, 1, 5, 6, 2, 5, 6];
        expect(ngramLookup(history, 2, 2, 1)).toEqual([2]);
    });

    it("respects the n range: a match shorter than MIN is no proposal", () => {
        const history = [1, 2, 3, 9, 4, 5, 6, 9];
        expect(ngramLookup(history, 1, 3, 3)).toEqual([4, 5, 6]);
        expect(ngramLookup(history, 2, 3, 3)).toEqual([]);
    });

    it("proposes nothing when nothing recurs, or for a budget of 0", () => {
        expect(ngramLookup([1, 2, 3, 4, 5], 1, 4, 5)).toEqual([]);
        expect(ngramLookup([1, 2, 1, 2], 1, 2, 0)).toEqual([]);
        expect(ngramLookup([7], 1, 3, 4)).toEqual([]);
    });

    it("stops at maxTokens and at the end of the history", () => {
        const history = [1, 2, 3, 4, 5, 6, 1, 2];
        expect(ngramLookup(history, 2, 2, 3)).toEqual([3, 4, 5]);
        expect(ngramLookup(history, 2, 2, 10)).toEqual([3, 4, 5, 6, 1, 2]);
        // An occurrence overlapping the tail still has a continuation (runs of one token).
        expect(ngramLookup([4, 4, 4], 2, 2, 5)).toEqual([4]);
    });
});
