import {describe, expect, it} from "vitest";
import {InvalidPolicyError} from "../errors.js";
import {parsePolicyList, splitPolicyList} from "./parsePolicyList.js";

describe("splitPolicyList", () => {
    it("splits compact specs on commas", () => {
        expect(splitPolicyList("strict, fuzzy:js:0.4 ,calibrated:6:0.01,")).toEqual(["strict", "fuzzy:js:0.4", "calibrated:6:0.01"]);
    });

    it("keeps commas inside JSON objects, arrays and strings", () => {
        const text = 'strict,{"kind":"fuzzy","threshold":0.4,"topK":50},{"kind":"calibrated","memory":"a,b.json"},greedy';
        expect(splitPolicyList(text)).toEqual([
            "strict",
            '{"kind":"fuzzy","threshold":0.4,"topK":50}',
            '{"kind":"calibrated","memory":"a,b.json"}',
            "greedy"
        ]);
    });

    it("names the field on unbalanced braces", () => {
        expect(() => splitPolicyList('strict,{"kind":"fuzzy"', "--policies")).toThrow(InvalidPolicyError);
        expect(() => splitPolicyList("strict}", "--policies")).toThrow(/unbalanced/);
    });
});

describe("parsePolicyList", () => {
    it("parses mixed compact and JSON entries into configs", () => {
        const policies = parsePolicyList('strict,{"kind":"fuzzy","divergence":"js","threshold":0.3,"topK":20},typical');
        expect(policies.map((policy) => policy.kind)).toEqual(["strict", "fuzzy", "typical"]);
        expect(policies[1]).toMatchObject({kind: "fuzzy", divergence: "js", threshold: 0.3, topK: 20});
    });

    it("rejects an unknown kind inside JSON with the field name", () => {
        expect(() => parsePolicyList('{"kind":"nope"}', "--policies")).toThrow(InvalidPolicyError);
    });
});
