import {describe, expect, it} from "vitest";
import type {ModelBackend} from "../backend/ModelBackend.js";
import type {BatteryItem} from "../batteries/BatteryItem.js";
import {EmptyBatteryError} from "../errors.js";
import {skewedBigramPair} from "../fairness/testing/skewedBigramPair.js";
import {calibrateSetting, type CalibrationPhase} from "./calibrateSetting.js";
import {measureConfiguration} from "./measureConfiguration.js";
import {renderCalibrationReport} from "./renderCalibrationReport.js";
import {splitBattery} from "./splitBattery.js";
import {targetReferenceBattery} from "./testing/targetReferenceBattery.js";
import {thresholdGrid} from "./thresholdGrid.js";

const sampling = {temperature: 0, topK: 0, topP: 1, minP: 0};

/** The model, except that tokenizing an evaluation prompt while `locked()` fails the run. */
function guarded(model: ModelBackend, evaluation: readonly BatteryItem[], locked: () => boolean): ModelBackend {
    const forbidden = new Map(evaluation.map((item) => [item.prompt!, item.id]));
    return Object.assign(Object.create(model) as ModelBackend, {
        tokenize(text: string) {
            if (locked() && forbidden.has(text)) throw new Error(`evaluation item ${forbidden.get(text)} was generated during calibration`);
            return model.tokenize(text);
        }
    });
}

async function fixture() {
    const {target, draft} = skewedBigramPair(5);
    const items = await targetReferenceBattery(target);
    return {target, draft, items};
}

describe("calibrateSetting", () => {
    it("chooses on the calibration split without generating a single evaluation item, then validates on the rest", async () => {
        const {target, draft, items} = await fixture();
        const {evaluation} = splitBattery(items, 0.5, 0);
        let phase: CalibrationPhase | undefined;
        const phases: CalibrationPhase[] = [];
        const locked = () => phase !== "evaluation";
        const options = {
            target: guarded(target, evaluation, locked),
            draft: guarded(draft, evaluation, locked),
            items,
            grid: thresholdGrid("fuzzy", [0.1, 0.6]),
            gammas: [2, 3],
            maxAccuracyDrop: 50,
            calibrationShare: 0.5,
            sampling,
            maxTokens: 4,
            seed: 0,
            onPhase: (next: CalibrationPhase) => {
                phase = next;
                phases.push(next);
            }
        };
        // The guard is live: generating an evaluation item while locked fails.
        await expect(
            measureConfiguration(options.target, undefined, evaluation, {
                policy: {kind: "strict"},
                gamma: 0,
                sampling,
                maxTokens: 4,
                seed: 0
            })
        ).rejects.toThrow(/was generated during calibration/);

        const result = await calibrateSetting(options);
        expect(phases).toEqual(["calibration", "evaluation"]);
        expect(result.evaluationItems).toEqual(evaluation.map((item) => item.id));
        expect(result.calibrationItems.filter((id) => result.evaluationItems.includes(id))).toEqual([]);
        expect(result.candidates.every((candidate) => candidate.items === result.calibrationItems.length)).toBe(true);
        // On this pair T = 0.1 keeps strict SD's accuracy but accepts less than it (JS rejects some
        // matching argmaxes); T = 0.6 accepts more at a 50-point cost, inside this budget.
        expect(
            result.candidates
                .filter((candidate) => candidate.threshold === 0.1)
                .every((candidate) => candidate.withinBudget && !candidate.gainsOverStrict)
        ).toBe(true);
        expect(result.selected).not.toBeNull();
        expect(result.selected!.threshold).toBe(0.6);
        expect(result.selected!.gainsOverStrict).toBe(true);
        expect(result.selected!.meanAcceptanceLength).toBeGreaterThan(
            result.strict.find((row) => row.gamma === result.selected!.gamma)!.meanAcceptanceLength
        );
        expect(result.selected!.tokensPerSecond).toBe(
            Math.max(
                ...result.candidates
                    .filter((candidate) => candidate.withinBudget && candidate.gainsOverStrict)
                    .map((candidate) => candidate.tokensPerSecond)
            )
        );
        const evaluated = result.evaluation!;
        expect(evaluated.setting.items).toBe(evaluation.length);
        expect(evaluated.setting.interval.lower).toBeLessThanOrEqual(evaluated.setting.accuracy);
        expect(evaluated.strict.accuracy).toBe(1);
        expect(result.policySpec).toBe(`fuzzy:js:${result.selected!.threshold}`);
        const report = renderCalibrationReport(result, {target: "t", draft: "d", battery: "b"});
        expect(report).toContain(`**Selected: fuzzy:js:${result.selected!.threshold} with γ = ${result.selected!.gamma}**`);
        expect(report).toMatch(/On the evaluation split \(\d+ items the choice never saw\)/);
    });

    it("never selects a setting that accepts no more than strict SD, even within the budget, and says so", async () => {
        const {target, draft, items} = await fixture();
        const {evaluation} = splitBattery(items, 0.5, 0);
        const phases: CalibrationPhase[] = [];
        const result = await calibrateSetting({
            target: guarded(target, evaluation, () => true),
            draft,
            items,
            grid: thresholdGrid("fuzzy", [0.05, 0.1]),
            gammas: [2, 3],
            maxAccuracyDrop: 0,
            calibrationShare: 0.5,
            sampling,
            maxTokens: 4,
            seed: 0,
            onPhase: (phase) => phases.push(phase)
        });
        expect(result.candidates.every((candidate) => candidate.withinBudget && !candidate.gainsOverStrict)).toBe(true);
        expect(result.selected).toBeNull();
        expect(result.evaluation).toBeNull();
        expect(phases).toEqual(["calibration"]);
        const report = renderCalibrationReport(result, {target: "t", draft: "d", battery: "b"});
        expect(report).toMatch(
            /\*\*No fuzzy setting beats strict SD within the budget\.\*\* The 4 setting\(s\) within 0\.0 pt accept no more tokens per verification than strict SD/
        );
        expect(report).toMatch(/Note: strict SD's 95% CI on the calibration split is \d+\.\d pt wide, far wider than the 0\.0 pt budget/);
    });

    it("says plainly when no setting meets the budget, and never touches the evaluation split", async () => {
        const {target, draft, items} = await fixture();
        const {evaluation} = splitBattery(items, 0.5, 0);
        const phases: CalibrationPhase[] = [];
        const result = await calibrateSetting({
            target: guarded(target, evaluation, () => true),
            draft,
            items,
            grid: thresholdGrid("fuzzy", [0.6, 0.69]),
            gammas: [3],
            maxAccuracyDrop: 0,
            calibrationShare: 0.5,
            sampling,
            maxTokens: 4,
            seed: 0,
            onPhase: (phase) => phases.push(phase)
        });
        expect(phases).toEqual(["calibration"]);
        expect(result.selected).toBeNull();
        expect(result.evaluation).toBeNull();
        expect(result.candidates.every((candidate) => !candidate.withinBudget && candidate.accuracyDrop > 0)).toBe(true);
        expect(renderCalibrationReport(result, {target: "t", draft: "d", battery: "b"})).toMatch(
            /\*\*No fuzzy setting meets the budget\.\*\* Every threshold × γ tried loses more than 0\.0 pt/
        );
    });

    it("ranks by one-step-verification speed when asked, from costs measured on the calibration split only", async () => {
        const {target, draft, items} = await fixture();
        const {evaluation} = splitBattery(items, 0.5, 0);
        let phase: CalibrationPhase | undefined;
        const locked = () => phase !== "evaluation";
        const result = await calibrateSetting({
            target: guarded(target, evaluation, locked),
            draft: guarded(draft, evaluation, locked),
            items,
            grid: thresholdGrid("fuzzy", [0.1, 0.6]),
            gammas: [2, 3],
            maxAccuracyDrop: 100,
            calibrationShare: 0.5,
            sampling,
            maxTokens: 4,
            seed: 0,
            speed: "one-step",
            onPhase: (next) => {
                phase = next;
            }
        });
        expect(result.speed).toBe("one-step");
        // Every candidate's ranking speed is emitted / ((emitted − accepted)·t_T(1) + drafted·t_D), all at the same costs.
        const implied = result.candidates.map((candidate) => ({
            perCall: (candidate.emittedTokens - candidate.acceptedTokens) / candidate.emittedTokens,
            perDraft: candidate.draftTokens / candidate.emittedTokens,
            speed: candidate.rankingTokensPerSecond
        }));
        expect(implied.every((row) => row.speed > 0 && Number.isFinite(row.speed))).toBe(true);
        expect(result.selected!.rankingTokensPerSecond).toBe(
            Math.max(...result.candidates.map((candidate) => candidate.rankingTokensPerSecond))
        );
        // One pair (t_T(1), t_D) explains every candidate: solve it from two, check the others.
        const [first, second] = implied;
        const determinant = first.perCall * second.perDraft - second.perCall * first.perDraft;
        expect(Math.abs(determinant)).toBeGreaterThan(1e-9);
        const targetStep = (second.perDraft / first.speed - first.perDraft / second.speed) / determinant;
        const draftStep = (first.perCall / second.speed - second.perCall / first.speed) / determinant;
        expect(targetStep).toBeGreaterThan(0);
        expect(draftStep).toBeGreaterThan(0);
        for (const row of implied) expect(1 / row.speed).toBeCloseTo(row.perCall * targetStep + row.perDraft * draftStep, 9);
        expect(result.evaluation!.oneStep!.speedupOverTargetOnly).toBeGreaterThan(0);
        expect(renderCalibrationReport(result, {target: "t", draft: "d", battery: "b"})).toContain("at one-step verification");
    });

    it("rejects a battery too small to split", async () => {
        const {target, draft, items} = await fixture();
        await expect(
            calibrateSetting({
                target,
                draft,
                items: items.slice(0, 1),
                grid: thresholdGrid("fuzzy"),
                gammas: [2],
                maxAccuracyDrop: 1,
                calibrationShare: 0.5,
                sampling,
                maxTokens: 4,
                seed: 0
            })
        ).rejects.toThrow(EmptyBatteryError);
    });
});
