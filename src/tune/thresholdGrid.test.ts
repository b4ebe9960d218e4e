import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../errors.js";
import {thresholdGrid} from "./thresholdGrid.js";

describe("thresholdGrid", () => {
    it("appends each threshold as the policy's last argument", () => {
        const fuzzy = thresholdGrid("fuzzy:tv", [0.1, 0.5]);
        expect(fuzzy.parameter).toBe("T (tv)");
        expect(fuzzy.policies).toEqual([
            {kind: "fuzzy", divergence: "tv", threshold: 0.1, distribution: "raw"},
            {kind: "fuzzy", divergence: "tv", threshold: 0.5, distribution: "raw"}
        ]);
        const calibrated = thresholdGrid("calibrated:3", [0.05], "memory.json");
        expect(calibrated.policies[0]).toMatchObject({kind: "calibrated", frequencyThreshold: 3, tau: 0.05, memory: "memory.json"});
        expect(thresholdGrid("typical").policies.map((policy) => policy.kind === "typical" && policy.posteriorThreshold)).toEqual(
            thresholdGrid("typical").thresholds
        );
        expect(thresholdGrid("fuzzy").policies.every((policy) => policy.kind === "fuzzy" && policy.divergence === "js")).toBe(true);
    });

    it("rejects other policies, a threshold inside the policy, empty lists and a stray memory", () => {
        expect(() => thresholdGrid("strict")).toThrow(InvalidInputError);
        expect(() => thresholdGrid("fuzzy:js:0.4")).toThrow(/without its threshold/);
        expect(() => thresholdGrid("fuzzy", [])).toThrow(/^thresholds: is empty/);
        expect(() => thresholdGrid("fuzzy", [0.1], "memory.json")).toThrow(/^memory: only applies to the calibrated policy/);
        expect(() => thresholdGrid("calibrated", [2])).toThrow(/^thresholds\.tau: /);
        expect(() => thresholdGrid("fuzzy:kl", [0.1])).toThrow(/^policy\.divergence/);
    });
});
