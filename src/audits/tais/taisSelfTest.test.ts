import {describe, expect, it} from "vitest";

import {TAIS_SELF_TEST_CASES, runTaisSelfTest} from "./taisSelfTest.js";

describe("runTaisSelfTest", () => {
    it("classifies every built-in case as expected and covers every class", () => {
        const report = runTaisSelfTest();
        expect(report.outcomes.filter((outcome) => !outcome.passed)).toEqual([]);
        expect(report.passed).toBe(true);
        expect(new Set(report.outcomes.map((outcome) => outcome.actual))).toEqual(new Set(["equivalent", "divergent", "inconclusive"]));
        expect(new Set(report.outcomes.map((outcome) => outcome.actualPaper))).toEqual(
            new Set(["null-consistent", "divergent", "insufficient_data"])
        );
    });

    it("reports the |h| values its case descriptions state", () => {
        const byName = new Map(runTaisSelfTest().outcomes.map((outcome) => [outcome.name, outcome.maxAbsoluteH]));
        expect(byName.get("high_h_divergent")).toBeCloseTo(0.442, 3);
        expect(byName.get("low_h_failed_tost_divergent")).toBeCloseTo(0.04, 3);
        expect(byName.get("borderline_h_above_cutoff")).toBeCloseTo(0.1026, 4);
        expect(byName.get("borderline_h_below_cutoff")).toBeCloseTo(0.0945, 4);
        expect(byName.get("insufficient_data")).toBeNull();
    });

    it("fails when a case expects the wrong class", () => {
        const wrong = {...TAIS_SELF_TEST_CASES[0], expected: "divergent" as const};
        const report = runTaisSelfTest([wrong]);
        expect(report.passed).toBe(false);
        expect(report.outcomes[0].actual).toBe("equivalent");
        expect(runTaisSelfTest([{...TAIS_SELF_TEST_CASES[0], expectedPaper: "divergent" as const}]).passed).toBe(false);
    });

    it("fails when a degenerate flag is missing", () => {
        const wrong = {...TAIS_SELF_TEST_CASES[0], expectedDegenerate: ["advbench_refusal"]};
        expect(runTaisSelfTest([wrong]).passed).toBe(false);
    });
});
