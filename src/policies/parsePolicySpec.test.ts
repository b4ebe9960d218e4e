import {describe, expect, it} from "vitest";
import {InvalidPolicyError} from "../errors.js";
import {parsePolicySpec, policyLabel} from "./parsePolicySpec.js";

describe("parsePolicySpec", () => {
    it.each([
        ["strict", {kind: "strict"}],
        ["block", {kind: "block"}],
        ["fuzzy:js:0.4", {kind: "fuzzy", divergence: "js", threshold: 0.4, distribution: "raw"}],
        ["fuzzy:js-fsd:0.5:50", {kind: "fuzzy", divergence: "js-fsd", threshold: 0.5, topK: 50, distribution: "raw"}],
        ["calibrated", {kind: "calibrated", frequencyThreshold: 6, tau: 0.01, onlineUpdate: true}],
        ["calibrated:3:0.1", {kind: "calibrated", frequencyThreshold: 3, tau: 0.1, onlineUpdate: true}],
        ["typical", {kind: "typical", posteriorThreshold: 0.09, posteriorAlpha: 0.3}],
        ["lossy:0.05", {kind: "lossy", tau: 0.05}],
        ["random:0.6", {kind: "random", acceptanceProbability: 0.6}],
        [
            '{"kind":"fuzzy","threshold":0.2,"distribution":"processed"}',
            {kind: "fuzzy", divergence: "js", threshold: 0.2, distribution: "processed"}
        ]
    ])("%s", (spec, expected) => {
        const config = parsePolicySpec(spec);
        expect(config).toEqual(expected);
        expect(parsePolicySpec(policyLabel(config).replace("(processed)", ""))).toMatchObject({kind: expected.kind});
    });

    it.each([
        ["yolo", /unknown policy kind/],
        ["fuzzy:js", /threshold/],
        ["fuzzy:hellinger:0.3", /divergence/],
        ["lossy:abc", /tau must be a number/],
        ["strict:1", /at most 0 arguments/],
        ["block:2", /at most 0 arguments/],
        ["random:1.5", /acceptanceProbability/],
        ["{kind:", /not valid JSON/]
    ])("%s is a typed error", (spec, message) => {
        expect(() => parsePolicySpec(spec)).toThrow(InvalidPolicyError);
        expect(() => parsePolicySpec(spec)).toThrow(message);
    });
});
