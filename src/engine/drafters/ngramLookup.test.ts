import {describe, expect, it} from "vitest";
import {longestTailMatch, ngramLookup} from "./ngramLookup.js";

describe("ngramLookup", () => {
    it("takes the longest match in range before shorter ones", () => {
        // Tail [7, 8, 9]: the 3-gram recurs at index 4 (followed by 20, 21); the 1-gram 9 recurs later at index 10 (followed by 30).
        const history = [1, 2, 3, 4, 7, 8, 9, 20, 21, 5, 9, 30, 7, 8, 9];
        expect(longestTailMatch(history, 8)).toEqual({end: 7, length: 3});
        expect(ngramLookup(history, 1, 3, 2)).toEqual([20, 21]);
        // Limited to n ≤ 1, the most recent occurrence of 9 wins.
        expect(longestTailMatch(history, 1)).toEqual({end: 11, length: 1});
        expect(ngramLookup(history, 1, 1, 2)).toEqual([30]);
    });

    it("among equally long matches takes the most recent", () => {
        const history = [5, 6, 1, 5, 6, 2, 5, 6];
        expect(ngramLookup(history, 2, 2, 1)).toEqual([2]);
        expect(ngramLookup(history, 2, 8, 1)).toEqual([2]);
    });

    it("proposes n − MIN + 1 tokens for a match of n, capped by maxTokens and the history's end", () => {
        const history = [1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4];
        // Match [1, 2, 3, 4] (n = 4), followed by 5, 6, 7, 8, 9, 1, …
        expect(ngramLookup(history, 1, 8, 10)).toEqual([5, 6, 7, 8]);
        expect(ngramLookup(history, 2, 8, 10)).toEqual([5, 6, 7]);
        expect(ngramLookup(history, 4, 8, 10)).toEqual([5]);
        expect(ngramLookup(history, 1, 8, 2)).toEqual([5, 6]);
        // maxN caps n, so also the length.
        expect(ngramLookup(history, 1, 2, 10)).toEqual([5, 6]);
        // An occurrence overlapping the tail still has a continuation (runs of one token).
        expect(ngramLookup([4, 4, 4, 4], 1, 8, 5)).toEqual([4]);
    });

    it("proposes nothing when nothing recurs, when the match is shorter than MIN, or for a budget of 0", () => {
        expect(ngramLookup([1, 2, 3, 4, 5], 1, 4, 5)).toEqual([]);
        expect(ngramLookup([1, 2, 3, 9, 4, 5, 6, 9], 2, 3, 3)).toEqual([]);
        expect(ngramLookup([1, 2, 3, 9, 4, 5, 6, 9], 1, 3, 3)).toEqual([4]);
        expect(ngramLookup([1, 2, 1, 2], 1, 2, 0)).toEqual([]);
        expect(ngramLookup([7], 1, 3, 4)).toEqual([]);
        expect(longestTailMatch([1, 2, 3], 4)).toBeNull();
    });
});
