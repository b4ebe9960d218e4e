import {describe, expect, it} from "vitest";

import {addPosition, emptyDivergenceSums} from "./DivergenceSums.js";
import type {FairnessItemRecord} from "./FairnessItemRecord.js";
import {summarizeFairness} from "./summarizeFairness.js";

/** One item whose teacher-forced positions have the given (p, q) rows, and a run with the given counters. */
function record(id: string, group: string, rows: readonly (readonly [number[], number[]])[], gamma: number): FairnessItemRecord {
    const divergences = emptyDivergenceSums();
    for (const [p, q] of rows) addPosition(divergences, p, q, gamma);
    return {
        id,
        group,
        continuation: "target-output",
        divergences,
        run: {
            baselineTokens: 10,
            baselineMilliseconds: 100,
            speculativeTokens: 10,
            speculativeMilliseconds: 50,
            drafts: 4,
            draftTokens: 16,
            acceptedTokens: 8,
            identical: true,
            baselineDigest: "0"
        }
    };
}

describe("summarizeFairness", () => {
    it("reports the Disparate Impacts paper's S_T = E[f_γ(α(s))]/(1 + γc) beside the cost-curve prediction, each as defined", () => {
        const gamma = 4;
        // α(s) = 0.5 at one position and 0.9 at the other: f_4(0.5) = 1.9375, f_4(0.9) = 4.0951, mean 3.0163.
        const records = [
            record(
                "a",
                "x",
                [
                    [
                        [0.5, 0.5],
                        [1, 0]
                    ],
                    [
                        [0.9, 0.1],
                        [1, 0]
                    ]
                ],
                gamma
            )
        ];
        const costCurve = {targetTimeOne: 10, targetTimeVerify: 14, draftTime: 1};
        const settings = {
            gamma,
            maxTokens: 16,
            stop: [],
            temperature: 1,
            distributionTemperature: 1,
            seed: 1,
            resamples: 50,
            confidence: 0.95
        };
        const [group] = summarizeFairness({by: "task", groupNames: ["x"], records, costCurve, settings}).groups;
        // c = t_D / t_T(1) = 0.1, 1 + γc = 1.4: S_T = 3.0163 / 1.4 = 2.154500.
        expect(group.measured.seedSpeedup).toBeCloseTo(3.0163 / 1.4, 10);
        // Not f_γ of the mean α: f_4(0.7) / 1.4 = 2.7731 / 1.4 = 1.980786 (Jensen, f_γ convex).
        expect(group.measured.seedSpeedup).toBeGreaterThan(2.7731 / 1.4);
        // The cost-curve S inverts α̂ from 2 accepted per draft of 4 and prices verification at t_T(5):
        // f_4(α̂) = 3 → S = 3 · 10 / (4 · 1 + 14) = 1.666667.
        expect(group.measured.costCurveSpeedup).toBeCloseTo(30 / 18, 6);
        const withoutCurve = summarizeFairness({by: "task", groupNames: ["x"], records, costCurve: null, settings}).groups[0];
        expect(withoutCurve.measured.seedSpeedup).toBeNull();
        expect(withoutCurve.measured.costCurveSpeedup).toBeNull();
    });
});
