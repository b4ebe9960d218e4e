import {describe, expect, it} from "vitest";
import {divergenceByKind} from "./DivergenceKind.js";
import {crossEntropy, entropy, fsdReferenceJensenShannon, jensenShannon, klDivergence, overlap, totalVariation} from "./divergences.js";
import {topKBuckets} from "./topKBuckets.js";

const p = [0.5, 0.5];
const q = [0.9, 0.1];

describe("divergences (hand-computed, natural log)", () => {
    it("KL in both directions", () => {
        // KL(p‖q) = 0.5 ln(0.5/0.9) + 0.5 ln(0.5/0.1) = 0.5(−0.587787) + 0.5(1.609438) = 0.510826
        expect(klDivergence(p, q)).toBeCloseTo(0.5108256237659907, 14);
        // KL(q‖p) = 0.9 ln(1.8) + 0.1 ln(0.2) = 0.529007 − 0.160944 = 0.368064
        expect(klDivergence(q, p)).toBeCloseTo(0.3680642071684971, 14);
        expect(klDivergence([1, 0], [0.5, 0.5])).toBeCloseTo(Math.log(2), 15);
        expect(klDivergence([0.5, 0.5], [1, 0])).toBe(Infinity);
        expect(klDivergence(p, p)).toBe(0);
    });

    it("textbook JS: symmetric, ln 2 for disjoint supports, hand value", () => {
        // m = (0.7, 0.3); JS = ½[0.5 ln(0.5/0.7) + 0.5 ln(0.5/0.3)] + ½[0.9 ln(0.9/0.7) + 0.1 ln(0.1/0.3)]
        const expected =
            0.5 * (0.5 * Math.log(0.5 / 0.7) + 0.5 * Math.log(0.5 / 0.3)) + 0.5 * (0.9 * Math.log(0.9 / 0.7) + 0.1 * Math.log(0.1 / 0.3));
        expect(jensenShannon(p, q)).toBeCloseTo(expected, 15);
        expect(jensenShannon(q, p)).toBeCloseTo(expected, 15);
        expect(jensenShannon([1, 0], [0, 1])).toBeCloseTo(Math.log(2), 15);
    });

    it("the FSD reference code's JS variant is ½KL(m‖p)+½KL(m‖q), different from textbook JS and unbounded", () => {
        const m = [0.7, 0.3];
        const expected = 0.5 * klDivergence(m, p) + 0.5 * klDivergence(m, q);
        expect(fsdReferenceJensenShannon(p, q)).toBeCloseTo(expected, 15);
        expect(Math.abs(fsdReferenceJensenShannon(p, q) - jensenShannon(p, q))).toBeGreaterThan(1e-3);
        expect(fsdReferenceJensenShannon([1, 0], [0, 1])).toBe(Infinity);
    });

    it("total variation, overlap, cross-entropy, entropy", () => {
        expect(totalVariation(p, q)).toBeCloseTo(0.4, 15);
        expect(overlap(p, q)).toBeCloseTo(0.6, 15);
        expect(overlap(p, q) + totalVariation(p, q)).toBeCloseTo(1, 15);
        expect(crossEntropy(p, q)).toBeCloseTo(-(0.5 * Math.log(0.9) + 0.5 * Math.log(0.1)), 15);
        expect(crossEntropy(p, q)).toBeCloseTo(entropy(p) + klDivergence(p, q), 14);
        expect(entropy([0.25, 0.25, 0.25, 0.25])).toBeCloseTo(Math.log(4), 15);
    });

    it("divergence kinds take (target, draft) and map to the right direction", () => {
        expect(divergenceByKind["kl-draft-target"](p, q)).toBe(klDivergence(q, p));
        expect(divergenceByKind["kl-target-draft"](p, q)).toBe(klDivergence(p, q));
        expect(divergenceByKind.tv(p, q)).toBe(totalVariation(p, q));
    });
});

describe("topKBuckets", () => {
    it("gathers the target's top-k ids plus a rest bucket for each distribution", () => {
        const target = [0.1, 0.4, 0.05, 0.3, 0.15];
        const draft = [0.2, 0.2, 0.2, 0.2, 0.2];
        const targetOut = new Float64Array(3);
        const draftOut = new Float64Array(3);
        expect(topKBuckets(target, draft, 2, targetOut, draftOut)).toBe(3);
        expect(Array.from(targetOut)).toEqual([0.4, 0.3, expect.closeTo(0.3, 15)]);
        expect(Array.from(draftOut)).toEqual([0.2, 0.2, expect.closeTo(0.6, 15)]);
    });

    it("keeps the lowest ids on ties and has an empty rest bucket when k ≥ V", () => {
        const targetOut = new Float64Array(5);
        const draftOut = new Float64Array(5);
        const ids = new Int32Array(4);
        expect(topKBuckets([0.25, 0.25, 0.25, 0.25], [0.1, 0.2, 0.3, 0.4], 2, targetOut, draftOut, ids)).toBe(3);
        expect(Array.from(ids.subarray(0, 2))).toEqual([0, 1]);
        expect(topKBuckets([0.5, 0.5], [0.1, 0.9], 4, targetOut, draftOut, ids)).toBe(3);
        expect(targetOut[2]).toBe(0);
        expect(draftOut[2]).toBe(0);
    });

    it("the top-k divergence equals the full divergence when the rest is merged consistently", () => {
        const target = [0.5, 0.3, 0.2];
        const draft = [0.4, 0.4, 0.2];
        const targetOut = new Float64Array(3);
        const draftOut = new Float64Array(3);
        const bins = topKBuckets(target, draft, 2, targetOut, draftOut);
        // The rest bucket holds exactly id 2, so nothing is merged.
        expect(jensenShannon(targetOut, draftOut, bins)).toBeCloseTo(jensenShannon(target, draft), 15);
    });
});
