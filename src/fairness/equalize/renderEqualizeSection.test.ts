import {describe, expect, it} from "vitest";
import type {FairnessAnalysis} from "../FairnessAnalysis.js";
import type {EqualizeAnalysis, EqualizedGroup} from "./EqualizeAnalysis.js";
import {renderEqualizeSection} from "./renderEqualizeSection.js";
import {speedupSpread} from "./speedupSpread.js";

const analysis = {
    by: "language",
    settings: {gamma: 4, maxTokens: 32, temperature: 0, distributionTemperature: 1, seed: 0, resamples: 100, confidence: 0.95},
    across: {unfairness: {estimate: 0.01, low: 0.005, high: 0.02, confidence: 0.95, resamples: 100}}
} as unknown as FairnessAnalysis;
const interval = (estimate: number) => ({estimate, low: estimate - 0.1, high: estimate + 0.1, confidence: 0.95, resamples: 100});

function group(name: string, gamma: number, predicted: [number, number], measured: [number, number]): EqualizedGroup {
    return {
        name,
        inferredAlpha: 0.7,
        gamma,
        predictedByGamma: [1, 1, 1, 1],
        predicted: {atGlobalGamma: predicted[0], atOwnGamma: predicted[1]},
        measured: {
            atGlobalGamma: interval(measured[0]),
            atOwnGamma: interval(measured[1]),
            inferredAlphaAtOwnGamma: 0.7,
            acceptanceRateAtOwnGamma: 0.6,
            meanAcceptanceLengthAtOwnGamma: 2.5,
            identicalShareAtOwnGamma: 1
        }
    };
}

function equalizeOf(groups: EqualizedGroup[]): EqualizeAnalysis {
    const spread = (value: (group: EqualizedGroup) => number) =>
        speedupSpread(groups.map((entry) => ({name: entry.name, speedup: value(entry)})));
    return {
        globalGamma: 4,
        maxGamma: 4,
        costs: {targetMilliseconds: [1, 1.5, 2, 2.5, 3], draftMilliseconds: 0.25},
        choice: "per-group-gamma",
        groups,
        spread: {
            predicted: {before: spread((entry) => entry.predicted.atGlobalGamma), after: spread((entry) => entry.predicted.atOwnGamma)},
            measured: {
                before: spread((entry) => entry.measured.atGlobalGamma.estimate),
                after: spread((entry) => entry.measured.atOwnGamma.estimate)
            }
        }
    };
}

describe("renderEqualizeSection", () => {
    it("says when the measurement does not confirm a predicted narrowing, and what the slowest group gained", () => {
        // Predicted 1.2 / 0.8 = 1.5 → 1.2 / 1.0 = 1.2; measured 1.0 / 0.5 = 2 → 1.1 / 0.5 = 2.2.
        const text = renderEqualizeSection(
            analysis,
            equalizeOf([group("en", 4, [1.2, 1.2], [1.0, 1.1]), group("ja", 1, [0.8, 1.0], [0.5, 0.5])])
        ).join("\n");
        expect(text).toContain("**Per-group γ narrows the predicted spread** (max/min 1.50 → 1.20, variance 0.0400 → 0.0100)");
        expect(text).toContain(
            "**does not narrow the measured one** (max/min 2.00 → 2.20, variance 0.0625 → 0.0900). The measurement does not confirm the prediction"
        );
        // Variance 0.0625 → 0.09 is +44%; predicted 0.04 → 0.01 is −75%.
        expect(text).toContain(
            "serving each group its best γ moved the slowest language at γ = 4 (ja) from 0.50× to 0.50× measured (0.80× → 1.00× predicted), and the speed-up variance across groups by +44% measured (−75% predicted)."
        );
        expect(text).toContain("| ja | 0.700 | 1 | 1 | 0.80× | 1.00× | 0.50× [0.40, 0.60] | 0.50× [0.40, 0.60] | 0.700 | 2.50 | 1.00 |");
        // Both measured at least as fast at their own γ; ja's interval [0.4, 0.6] lies below 1, en's does not.
        expect(text).not.toContain("contradicts the prediction");
        expect(text).toContain("Measured slower than target-only at the hint γ (whole interval below 1×): ja —");
        expect(text).toContain("that is `specgate calibrate`'s job");
    });

    it("does not call a spread narrower when max/min and variance disagree", () => {
        const text = renderEqualizeSection(
            analysis,
            equalizeOf([
                group("en", 6, [1.5, 2.0], [1.0, 1.8]),
                group("es", 4, [1.2, 1.2], [0.75, 1.2]),
                group("ja", 2, [1.0, 1.1], [0.5, 1.2])
            ])
        ).join("\n");
        // Measured 1.0, 0.75, 0.5 → 1.8, 1.2, 1.2: max/min 2 → 1.5 falls, variance 0.0417 → 0.08 rises.
        expect(text).toContain("**does not narrow the measured one** (max/min 2.00 → 1.50, variance 0.0417 → 0.0800)");
        expect(text).not.toContain("contradicts the prediction");
    });

    it("keeps the global γ where the re-run measured the predicted γ slower, and says so", () => {
        const text = renderEqualizeSection(
            analysis,
            equalizeOf([group("en", 1, [0.7, 0.9], [0.84, 0.67]), group("ja", 1, [0.55, 0.85], [0.64, 0.65])])
        ).join("\n");
        expect(text).toContain(
            "**The re-run contradicts the prediction for en**: at the predicted best γ the whole measured interval lies below the speed-up at γ = 4, so the hint γ stays 4 there."
        );
        expect(text).toMatch(/\| en \| 0\.700 \| 1 \| 4 \|/);
        expect(text).toMatch(/\| ja \| 0\.700 \| 1 \| 1 \|/);
    });
});
