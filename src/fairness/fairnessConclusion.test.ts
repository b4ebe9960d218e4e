import {describe, expect, it} from "vitest";
import {fairnessConclusion} from "./fairnessConclusion.js";
import type {FairnessAnalysis} from "./FairnessAnalysis.js";

type Input = Parameters<typeof fairnessConclusion>[0];

function analysis(speedups: Record<string, [number, number, number]>, items: number, skipped: number): Input {
    return {
        by: "language",
        settings: {confidence: 0.95, maxTokens: 32} as FairnessAnalysis["settings"],
        groups: Object.entries(speedups).map(([name, [estimate, low, high]]) => ({
            name,
            measured: {speedup: {estimate, low, high, confidence: 0.95, resamples: 100}}
        })) as unknown as FairnessAnalysis["groups"],
        items: Array.from({length: items - skipped}, () => ({})) as unknown as FairnessAnalysis["items"],
        context: {size: 256, skipped: Array.from({length: skipped}, (_value, index) => ({id: `s${index}`, group: "ja", promptTokens: 300}))}
    };
}

describe("fairnessConclusion", () => {
    it("says when every group ran slower than target-only, how many items were skipped, and that overlapping intervals rank nothing", () => {
        expect(fairnessConclusion(analysis({en: [0.85, 0.8, 0.9], ja: [0.69, 0.6, 0.82]}, 80, 33))).toEqual([
            "speed-up vs target-only per language (95% CI): en 0.85× [0.80, 0.90], ja 0.69× [0.60, 0.82]",
            "items skipped, prompt too long for the 256-token context with 32 generated tokens: 33 of 80 (not measured; raise --context-size or lower --max-tokens)",
            "conclusion: speculation ran slower than target-only in every language (0.69×–0.85×): on this machine it does not pay, whatever the groups' differences; " +
                "the intervals of the fastest (en) and slowest (ja) overlap, so this many items (47) do not establish their order"
        ]);
    });

    it("tells groups apart only beyond both intervals, and names the groups speculation paid for", () => {
        const [, skipped, conclusion] = fairnessConclusion(analysis({en: [1.6, 1.5, 1.7], de: [0.9, 0.8, 1.0]}, 40, 0));
        expect(skipped).toBe("items skipped, prompt too long for the 256-token context with 32 generated tokens: 0 of 40");
        expect(conclusion).toBe("conclusion: speculation paid for en only (0.90×–1.60×); en is faster than de beyond both intervals");
        expect(fairnessConclusion(analysis({en: [1.6, 1.5, 1.7], de: [1.2, 1.1, 1.3]}, 40, 0))[2]).toMatch(
            /^conclusion: speculation ran faster than target-only in every language \(1\.20×–1\.60×\); en is faster than de/
        );
    });
});
