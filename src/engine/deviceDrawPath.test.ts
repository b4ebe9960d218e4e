import {describe, expect, it} from "vitest";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {draftReads, rowsCopiedReason} from "./deviceDrawPath.js";
import {type GenerationOptionsInput, parseGenerationOptions} from "./GenerationOptions.js";

/**
 * Which generations at T > 0 verify on the device route, by what their drafts carry, and the reason
 * the others name for copying whole rows.
 */
const device = {tokenSelection: "device"} as ModelBackend;
const model = {vocabularySize: 260};
const lookup = {};

function reason(drafter: {vocabularySize?: number} | undefined, input: GenerationOptionsInput, tree = false) {
    const options = parseGenerationOptions({sampling: {temperature: 1}, ...input});
    const reads = {policyGiven: false, constrained: false, speculative: drafter !== undefined || tree};
    return rowsCopiedReason(device, options, {...reads, ...draftReads(drafter, tree, options)});
}

describe("draftReads", () => {
    it("classifies drafts by what they carry: none from lookup or greedy drafting, q from sampled model drafts", () => {
        const options = (input: GenerationOptionsInput) => parseGenerationOptions(input);
        expect(draftReads(lookup, false, options({}))).toEqual({tree: false, lookupDrafts: true, modelDrafts: false});
        expect(draftReads(model, false, options({}))).toEqual({tree: false, lookupDrafts: false, modelDrafts: true});
        expect(draftReads(model, false, options({draftSampling: "greedy"}))).toEqual({tree: false, lookupDrafts: true, modelDrafts: false});
        // minConfidence reads each draft row's top probability: neither route.
        expect(draftReads(model, false, options({minConfidence: 0.5}))).toEqual({tree: false, lookupDrafts: false, modelDrafts: false});
        expect(draftReads(model, false, options({draftSampling: "greedy", minConfidence: 0.5}))).toEqual({
            tree: false,
            lookupDrafts: false,
            modelDrafts: false
        });
        expect(draftReads(model, true, options({}))).toEqual({tree: true, lookupDrafts: false, modelDrafts: false});
    });
});

describe("rowsCopiedReason at T > 0", () => {
    it.each([
        {name: "strict, lookup drafts", drafter: lookup, input: {}, expected: null},
        {name: "block, lookup drafts", drafter: lookup, input: {policy: {kind: "block"}}, expected: null},
        {name: "strict, sampled model drafts", drafter: model, input: {}, expected: null},
        {name: "strict, greedy model drafts", drafter: model, input: {draftSampling: "greedy"}, expected: null},
        {name: "block, greedy model drafts", drafter: model, input: {policy: {kind: "block"}, draftSampling: "greedy"}, expected: null},
        {
            name: "block, sampled model drafts",
            drafter: model,
            input: {policy: {kind: "block"}},
            expected: "block verification sums both rows over the vocabulary"
        },
        {name: "strict, minConfidence", drafter: model, input: {minConfidence: 0.5}, expected: "verification at T > 0 with a draft model"},
        {name: "match, lookup drafts", drafter: lookup, input: {policy: {kind: "match"}}, expected: "verification at T > 0"},
        {name: "fuzzy, model drafts", drafter: model, input: {policy: {kind: "fuzzy", threshold: 0.5}}, expected: "policy reads whole rows"}
    ] as const)("$name: $expected", ({drafter, input, expected}) => {
        expect(reason(drafter, input as GenerationOptionsInput)).toBe(expected);
    });

    it("token trees read whole rows for their residual; target-only draws need none", () => {
        expect(reason(model, {}, true)).toBe("token tree residuals sum whole rows");
        expect(reason(undefined, {gamma: 0})).toBeNull();
        expect(reason(undefined, {gamma: 0, policy: {kind: "greedy"}})).toBe("policy reads whole rows");
    });
});
