import {describe, expect, it} from "vitest";
import {loadJsonlBattery} from "../../batteries/loadJsonlBattery.js";
import {InvalidInputError} from "../../errors.js";
import {analyzeFairness} from "../analyzeFairness.js";
import {renderFairnessReport} from "../renderFairnessReport.js";
import {twoLanguageBattery} from "../testing/fairnessFixtures.js";
import {skewedBigramPair} from "../testing/skewedBigramPair.js";
import {speedupSpread} from "./speedupSpread.js";

const context = {target: "t.gguf", draft: "d.gguf", battery: "two-language"};

describe("equalizeGamma on a bigram pair with a built-in disparity", () => {
    it("sends the well-drafted language to a long γ and the other to γ = 1, re-running each at its own γ", async () => {
        const {target, draft} = skewedBigramPair(5);
        const items = await loadJsonlBattery(twoLanguageBattery);
        // t_T(k) = 1 + 0.25·(k − 1) ms, t_D = 0.1 ms.
        const costs = {targetMilliseconds: [1, 1.25, 1.5, 1.75, 2, 2.25], draftMilliseconds: 0.1};
        // 12 tokens: whole steps at γ = 3 (3 × 4) and at γ = 5 (2 × 6), so no truncated step biases α̂.
        const analysis = await analyzeFairness({
            target,
            draft,
            items,
            gamma: 3,
            maxTokens: 12,
            resamples: 100,
            seed: 2,
            equalize: {maxGamma: 5, costs}
        });
        const equalize = analysis.equalize!;
        expect(equalize).toMatchObject({globalGamma: 3, maxGamma: 5, costs, choice: "per-group-gamma"});
        const [en, ja] = equalize.groups;
        // en: the draft copies the target, α̂ ≈ 1, f_γ = γ + 1, S = (γ + 1) / (1 + 0.35γ) grows with γ.
        expect(en.inferredAlpha).toBeCloseTo(1, 6);
        expect(en.gamma).toBe(5);
        expect(en.predicted.atGlobalGamma).toBeCloseTo(4 / 2.05, 6);
        expect(en.predicted.atOwnGamma).toBeCloseTo(6 / 2.75, 6);
        // ja: no draft is ever accepted, α̂ ≈ 0, f_γ = 1, so the cheapest step wins.
        expect(ja.inferredAlpha).toBeCloseTo(0, 6);
        expect(ja.gamma).toBe(1);
        expect(ja.predicted.atGlobalGamma).toBeCloseTo(1 / 2.05, 6);
        expect(ja.predicted.atOwnGamma).toBeCloseTo(1 / 1.35, 6);
        expect(ja.predictedByGamma).toHaveLength(5);
        // The re-runs happened at the chosen γ: en's two full steps carry 6 tokens each.
        expect(en.measured.meanAcceptanceLengthAtOwnGamma).toBe(6);
        expect(en.measured.acceptanceRateAtOwnGamma).toBe(1);
        expect(en.measured.inferredAlphaAtOwnGamma).toBeCloseTo(1, 6);
        expect(ja.measured.acceptanceRateAtOwnGamma).toBe(0);
        // Strict at temperature 0: the output is the target's at every γ.
        expect(equalize.groups.map((group) => group.measured.identicalShareAtOwnGamma)).toEqual([1, 1]);
        for (const group of equalize.groups)
            for (const interval of [group.measured.atGlobalGamma, group.measured.atOwnGamma]) {
                expect(interval.low).toBeLessThanOrEqual(interval.estimate);
                expect(interval.high).toBeGreaterThanOrEqual(interval.estimate);
            }
        // Predicted max/min: (4/2.05)/(1/2.05) = 4 at γ = 3, (6/2.75)/(1/1.35) = 2.945… at own γ.
        expect(equalize.spread.predicted.before.maxMinRatio).toBeCloseTo(4, 6);
        expect(equalize.spread.predicted.after.maxMinRatio).toBeCloseTo((6 / 2.75) * 1.35, 6);
        expect(equalize.spread.measured.after).toEqual(
            speedupSpread(equalize.groups.map((group) => ({name: group.name, speedup: group.measured.atOwnGamma.estimate})))
        );

        const report = renderFairnessReport(analysis, context);
        expect(report).toContain("## Equalized serving hints (--equalize)");
        // The hint γ column depends on the bigram runs' timings (noise), so either the predicted or the global γ.
        expect(report).toMatch(/\| en \| 1\.000 \| 5 \| [35] \| 1\.95× \| 2\.18× \|/);
        expect(report).toMatch(/\| ja \| 0\.000 \| 1 \| [13] \| 0\.49× \| 0\.74× \|/);
        expect(report).toContain("**Per-group γ narrows the predicted spread** (max/min 4.00 → 2.95, variance");
        expect(report).toContain("re-runs' outputs all equal target-only");
        expect(report.indexOf("## Equalized serving hints")).toBeLessThan(report.indexOf("## How to read this"));
    });

    it("says plainly when every group's best γ is the same", async () => {
        const items = await loadJsonlBattery(twoLanguageBattery);
        // t_T(k) = k and t_D = 0.5: one more draft costs more than even a sure acceptance returns, so γ = 1 for all.
        const costs = {targetMilliseconds: [1, 2, 3, 4, 5], draftMilliseconds: 0.5};
        const run = async (gamma: number) => {
            const {target, draft} = skewedBigramPair(5);
            return analyzeFairness({target, draft, items, gamma, maxTokens: 6, resamples: 50, equalize: {maxGamma: 4, costs}});
        };
        const atOne = await run(1);
        expect(atOne.equalize!.choice).toBe("all-at-global-gamma");
        expect(renderFairnessReport(atOne, context)).toContain(
            "**Equalizing cannot narrow the spread here**: every group's best γ is the one already served (γ = 1)"
        );
        const atThree = await run(3);
        expect(atThree.equalize!.choice).toBe("one-gamma-for-all");
        expect(atThree.equalize!.groups.map((group) => group.gamma)).toEqual([1, 1]);
        expect(renderFairnessReport(atThree, context)).toContain(
            "**Per-group γ cannot narrow the spread here beyond what one global γ does**: every group's best γ is the same (γ = 1)"
        );
    });

    it("measures the cost curve itself when none is given, raising the γ range to the analysis γ", async () => {
        const {target, draft} = skewedBigramPair(5);
        const items = await loadJsonlBattery(twoLanguageBattery);
        const analysis = await analyzeFairness({target, draft, items, gamma: 3, maxTokens: 4, resamples: 20, equalize: {maxGamma: 2}});
        const equalize = analysis.equalize!;
        expect(equalize.maxGamma).toBe(3);
        expect(equalize.costs.targetMilliseconds).toHaveLength(4);
        expect([...equalize.costs.targetMilliseconds, equalize.costs.draftMilliseconds].every((time) => time > 0)).toBe(true);
        expect(equalize.groups.every((group) => group.gamma >= 1 && group.gamma <= 3 && group.predictedByGamma.length === 3)).toBe(true);
        await expect(analyzeFairness({target, draft, items, maxTokens: 4, equalize: {maxGamma: 0}})).rejects.toThrow(InvalidInputError);
    });
});
