import {describe, expect, it} from "vitest";
import type {FairnessAnalysis} from "../FairnessAnalysis.js";
import type {EqualizeAnalysis, EqualizedGroup} from "./EqualizeAnalysis.js";
import {gammaServingHints, servedGamma} from "./gammaServingHints.js";

const settings: FairnessAnalysis["settings"] = {
    gamma: 4,
    maxTokens: 32,
    stop: [],
    temperature: 0,
    distributionTemperature: 1,
    seed: 0,
    resamples: 100,
    confidence: 0.95
};
const spread = {fastestGroup: "en", slowestGroup: "ja", maxMinRatio: 1, variance: 0};
const interval = (estimate: number, width = 0.1) => ({
    estimate,
    low: estimate - width,
    high: estimate + width,
    confidence: 0.95,
    resamples: 100
});

function group(name: string, gamma: number, atGlobal: number, atOwn: number): EqualizedGroup {
    return {
        name,
        inferredAlpha: 0.5,
        gamma,
        predictedByGamma: [1.2, 1.1, 1, 0.9],
        predicted: {atGlobalGamma: 0.9, atOwnGamma: 1.2},
        measured: {
            atGlobalGamma: interval(atGlobal),
            atOwnGamma: interval(atOwn),
            inferredAlphaAtOwnGamma: 0.5,
            acceptanceRateAtOwnGamma: 0.5,
            meanAcceptanceLengthAtOwnGamma: 2,
            identicalShareAtOwnGamma: 1
        }
    };
}

describe("servedGamma", () => {
    it("keeps the predicted γ unless the re-run's interval at it lies below the speed-up at the global γ", () => {
        // Own-γ intervals are estimate ± 0.1.
        expect(servedGamma(group("en", 2, 1.0, 1.1), 4)).toBe(2);
        expect(servedGamma(group("en", 2, 1.0, 0.95), 4)).toBe(2);
        expect(servedGamma(group("en", 2, 1.0, 0.85), 4)).toBe(4);
    });
});

describe("gammaServingHints", () => {
    it("maps groups to confirmed γ, keeps the model's picks, and lists groups measured slower than target-only", () => {
        const equalize: EqualizeAnalysis = {
            globalGamma: 4,
            maxGamma: 4,
            costs: {targetMilliseconds: [1, 1, 1, 1, 1], draftMilliseconds: 0.1},
            choice: "per-group-gamma",
            // en confirmed at γ 6; es contradicted ([0.65, 0.85] below 0.9), so γ 4, whose interval [0.8, 1.0] reaches 1; ja within noise at γ 1, interval [0.5, 0.7].
            groups: [group("en", 6, 1.2, 1.3), group("es", 2, 0.9, 0.75), group("ja", 1, 0.65, 0.6)],
            spread: {predicted: {before: spread, after: spread}, measured: {before: spread, after: spread}}
        };
        expect(gammaServingHints({by: "language", settings, equalize}, {target: "t.gguf", draft: "d.gguf"})).toEqual({
            format: "specgate-gamma-hints/1",
            by: "language",
            policy: "strict",
            temperature: 0,
            gamma: {en: 6, es: 4, ja: 1},
            predictedGamma: {en: 6, es: 2, ja: 1},
            defaultGamma: 4,
            slowerThanTargetOnly: ["ja"],
            target: "t.gguf",
            draft: "d.gguf"
        });
    });

    it("refuses an analysis run without --equalize", () => {
        expect(() => gammaServingHints({by: "task", settings}, {target: "t", draft: "d"})).toThrow(/run the analysis with --equalize/);
    });
});
