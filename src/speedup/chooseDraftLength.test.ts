import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../errors.js";
import {chooseDraftLength} from "./chooseDraftLength.js";
import {expectedTokensPerStep} from "./speedupModel.js";

/** A target step of n tokens: 10 ms plus `perToken` ms for each token beyond the first. */
const linear = (perToken: number) => (tokens: number) => 10 + perToken * (tokens - 1);

describe("chooseDraftLength", () => {
    it("drafts long when verification is nearly free and acceptance high (a memory-bound target alone)", () => {
        const choice = chooseDraftLength({alpha: 0.9, maxLength: 8, tokensPerPosition: 1, draftTime: 0.5, stepTime: linear(0.1)});
        expect(choice.length).toBeGreaterThanOrEqual(6);
        // The rate it reports is the objective at that length.
        expect(choice.rate).toBeCloseTo(
            expectedTokensPerStep(0.9, choice.length) / (choice.length * 0.5 + linear(0.1)(choice.length + 1)),
            12
        );
    });

    it("does not draft when acceptance is low or a verified token costs nearly a step", () => {
        expect(chooseDraftLength({alpha: 0.03, maxLength: 8, tokensPerPosition: 1, draftTime: 0.5, stepTime: linear(0.1)}).length).toBe(0);
        expect(chooseDraftLength({alpha: 0.8, maxLength: 8, tokensPerPosition: 1, draftTime: 0, stepTime: linear(9.5)}).length).toBe(0);
    });

    it("stops drafting in a long batch that a short one would draft in (compute-bound: a step's cost grows with its tokens)", () => {
        const base = {alpha: 0.7, maxLength: 8, tokensPerPosition: 1, draftTime: 0.2, stepTime: (tokens: number) => 2 + tokens};
        expect(chooseDraftLength(base).length).toBeGreaterThan(0);
        // 31 other sequences decoding one token each, each emitting one.
        expect(chooseDraftLength({...base, otherTokens: 31, otherYield: 31}).length).toBe(0);
    });

    it("charges drafting to the whole batch when the others wait for it, once when they draft alike", () => {
        const flat = {alpha: 0.8, maxLength: 4, tokensPerPosition: 1, draftTime: 0.5, stepTime: () => 1};
        expect(chooseDraftLength(flat).length).toBeGreaterThan(0);
        // 31 sequences of fixed length 0 would wait for this one's drafts: not worth it.
        expect(chooseDraftLength({...flat, otherTokens: 31, otherYield: 31}).length).toBe(0);
        // 31 sequences choosing alike draft in the same batched calls.
        expect(chooseDraftLength({...flat, mirrors: 31}).length).toBeGreaterThan(0);
    });

    it("counts a tree's width of target tokens per position", () => {
        const chain = chooseDraftLength({alpha: 0.6, maxLength: 4, tokensPerPosition: 1, draftTime: 0, stepTime: linear(3)});
        const wide = chooseDraftLength({alpha: 0.6, maxLength: 4, tokensPerPosition: 4, draftTime: 0, stepTime: linear(3)});
        expect(chain.length).toBeGreaterThan(0);
        expect(wide.length).toBe(0);
    });

    it("takes a measured curve that dips as flat there: a longer draft never looks cheaper", () => {
        const dipping = (tokens: number) => (tokens === 1 ? 10 : tokens <= 3 ? 4 : 10 + tokens);
        // Read as given, a 1- or 2-token draft would look 2.5 times cheaper than no draft.
        const choice = chooseDraftLength({alpha: 0.05, maxLength: 4, tokensPerPosition: 1, draftTime: 1, stepTime: dipping});
        expect(choice.length).toBe(0);
    });

    it("refuses α outside [0, 1] and a negative or fractional maximum", () => {
        const input = {alpha: 0.5, maxLength: 4, tokensPerPosition: 1, draftTime: 0, stepTime: linear(1)};
        expect(() => chooseDraftLength({...input, alpha: 1.5})).toThrow(InvalidInputError);
        expect(() => chooseDraftLength({...input, maxLength: -1})).toThrow(/maxLength|non-negative/);
        expect(() => chooseDraftLength({...input, maxLength: 1.5})).toThrow(InvalidInputError);
    });
});

describe("chooseDraftLength with the other auto sequences' acceptance", () => {
    it("adds each one's expected tokens, and equals mirrors at the same α", () => {
        const base = {alpha: 0.8, maxLength: 6, tokensPerPosition: 1, draftTime: 0.3, stepTime: linear(0.4)};
        const same = chooseDraftLength({...base, mirrors: 3});
        const listed = chooseDraftLength({...base, mirrorAlphas: [0.8, 0.8, 0.8]});
        expect(listed.rates).toEqual(same.rates);
        const mixed = chooseDraftLength({...base, mirrorAlphas: [0.1, 0.1, 0.1]});
        const time = 2 * 0.3 + linear(0.4)(4 * 3);
        expect(mixed.rates[2]).toBeCloseTo((expectedTokensPerStep(0.8, 2) + 3 * expectedTokensPerStep(0.1, 2)) / time, 12);
        expect(mixed.length).toBeLessThan(same.length);
        expect(() => chooseDraftLength({...base, mirrorAlphas: [1.5]})).toThrow(/mirrorAlphas\.0/);
    });
});

describe("chooseDraftLength with a cost of resuming", () => {
    it("charges every length above 0 the catch-up per token it emits, and drafts only where the gain exceeds it", () => {
        const base = {alpha: 0.8, maxLength: 6, tokensPerPosition: 1, draftTime: 0.3, stepTime: linear(0.4)};
        const free = chooseDraftLength(base);
        expect(free.length).toBeGreaterThan(0);
        const resumed = chooseDraftLength({...base, resumeTimePerToken: 0.2});
        expect(resumed.rates[0]).toBe(free.rates[0]);
        const k = free.length;
        const yields = expectedTokensPerStep(0.8, k);
        expect(resumed.rates[k]).toBeCloseTo(yields / (k * 0.3 + linear(0.4)(1 + k) + 0.2 * yields), 12);
        // A catch-up dearer than a generated token's share of the gain keeps speculation off.
        expect(chooseDraftLength({...base, resumeTimePerToken: 10}).length).toBe(0);
    });
});
