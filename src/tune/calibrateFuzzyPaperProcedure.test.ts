import {beforeAll, describe, expect, it} from "vitest";

import type {BatteryItem} from "../batteries/BatteryItem.js";
import {skewedBigramPair} from "../fairness/testing/skewedBigramPair.js";
import {calibrateFuzzyPaperProcedure, FSD_PAPER_PROCEDURE, type FsdPaperCalibrationResult} from "./calibrateFuzzyPaperProcedure.js";
import {targetReferenceBattery} from "./testing/targetReferenceBattery.js";
import {thresholdGrid} from "./thresholdGrid.js";

const pair = skewedBigramPair(5);
let items: BatteryItem[];
let result: FsdPaperCalibrationResult;

beforeAll(async () => {
    items = await targetReferenceBattery(pair.target);
    result = await calibrateFuzzyPaperProcedure({
        target: pair.target,
        draft: pair.draft,
        items,
        grid: thresholdGrid("fuzzy:js-fsd", FSD_PAPER_PROCEDURE.thresholds),
        sampling: {temperature: 1, topK: 0, topP: 1, minP: 0},
        maxTokens: 4,
        seed: 3,
        calibrationShare: 0.5
    });
});

describe("calibrateFuzzyPaperProcedure", () => {
    it("picks L′ as SD's fastest candidate length of 5, 10, 15, 20 (Fuzzy SD paper App. D)", () => {
        expect(result.lengths.map((row) => row.gamma)).toEqual([5, 10, 15, 20]);
        const fastest = result.lengths.reduce((best, row) => (row.tokensPerSecond > best.tokensPerSecond ? row : best));
        expect(result.sdLength).toBe(fastest.gamma);
    });

    it("matches SD's acceptance with a threshold from 0.1 … 1.0 at L′", () => {
        expect(result.acceptanceScan.map((row) => row.threshold)).toEqual([...FSD_PAPER_PROCEDURE.thresholds]);
        expect(result.acceptanceScan.every((row) => row.gamma === result.sdLength && row.trials.length === 1)).toBe(true);
        const sd = result.lengths.find((row) => row.gamma === result.sdLength)!;
        const gap = (threshold: number) =>
            Math.abs(result.acceptanceScan.find((row) => row.threshold === threshold)!.acceptanceRate - sd.acceptanceRate);
        for (const row of result.acceptanceScan) expect(gap(result.matchedThreshold)).toBeLessThanOrEqual(gap(row.threshold!));
    });

    it("steps T up from T_SD with 3 trials each and stops at 20% of the target–draft accuracy gap", () => {
        const {targetOnly, draftOnly, accuracyFloor, steps} = result;
        expect(accuracyFloor).toBeCloseTo(targetOnly.accuracy - 0.2 * (targetOnly.accuracy - draftOnly.accuracy), 12);
        expect(steps[0].threshold).toBe(result.matchedThreshold);
        steps.forEach((step, index) => {
            expect(step.trials).toHaveLength(3);
            expect(step.accuracy).toBeCloseTo(step.trials.reduce((sum, trial) => sum + trial.accuracy, 0) / 3, 12);
            if (index > 0) expect(step.threshold! - steps[index - 1].threshold!).toBeCloseTo(0.1, 9);
        });
        // Every step before the last stayed above the floor; the walk ends at the floor or at the grid's end.
        expect(steps.slice(0, -1).every((step) => step.accuracy > accuracyFloor)).toBe(true);
        const last = steps.at(-1)!;
        expect(last.accuracy <= accuracyFloor || last.threshold === 1).toBe(true);
        const above = steps.filter((step) => step.accuracy > accuracyFloor);
        expect(result.selected).toBe(above.at(-1) ?? null);
    });

    it("judges the choice on the disjoint evaluation split, or keeps SD when nothing stays above the floor", () => {
        expect(result.calibrationItems.filter((id) => result.evaluationItems.includes(id))).toEqual([]);
        if (result.selected == null) {
            expect(result.evaluation).toBeNull();
        } else {
            expect(result.evaluation!.setting.gamma).toBe(result.selected.gamma);
            expect(result.policySpec).toBe(`fuzzy:js-fsd:${result.selected.threshold}`);
        }
    });

    it("at temperature 0 walks until accuracy reaches the floor, moving L′ up while FSD accepts nearly every draft", async () => {
        // Greedy references: target-only scores 100%, the draft 50%, so the floor is 100 − 0.2·50 = 90%.
        const greedy = await calibrateFuzzyPaperProcedure({
            target: pair.target,
            draft: pair.draft,
            items,
            grid: thresholdGrid("fuzzy:js-fsd", FSD_PAPER_PROCEDURE.thresholds),
            sampling: {temperature: 0, topK: 0, topP: 1, minP: 0},
            maxTokens: 4,
            seed: 3,
            calibrationShare: 0.5
        });
        expect(greedy.targetOnly.accuracy).toBe(1);
        expect(greedy.accuracyFloor).toBeCloseTo(1 - 0.2 * (1 - greedy.draftOnly.accuracy), 12);
        const last = greedy.steps.at(-1)!;
        expect(last.accuracy).toBeLessThanOrEqual(greedy.accuracyFloor);
        expect(greedy.steps.length).toBeGreaterThan(1);
        expect(greedy.selected).toBe(greedy.steps.at(-2));
        // A step that accepts ≥ 95% of drafts was moved to a longer L′, up to the last candidate length.
        for (const step of greedy.steps.filter((entry) => entry.acceptanceRate >= FSD_PAPER_PROCEDURE.nearlyAllAccepted))
            expect(step.gamma).toBe(20);
    });

    it("refuses a policy other than fuzzy", async () => {
        await expect(
            calibrateFuzzyPaperProcedure({
                target: pair.target,
                draft: pair.draft,
                items,
                grid: thresholdGrid("typical"),
                sampling: {temperature: 1, topK: 0, topP: 1, minP: 0},
                maxTokens: 4,
                seed: 3,
                calibrationShare: 0.5
            })
        ).rejects.toThrow(/the Fuzzy SD paper's procedure calibrates fuzzy/);
    });
});
