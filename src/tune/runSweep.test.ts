import {describe, expect, it} from "vitest";
import {EmptyBatteryError, ScorerMismatchError} from "../errors.js";
import {skewedBigramPair} from "../fairness/testing/skewedBigramPair.js";
import {paretoFrontier} from "./paretoFrontier.js";
import {renderFrontierChart} from "./renderFrontierChart.js";
import {renderSweepReport} from "./renderSweepReport.js";
import {runSweep} from "./runSweep.js";
import {targetReferenceBattery} from "./testing/targetReferenceBattery.js";

const sampling = {temperature: 0, topK: 0, topP: 1, minP: 0};

describe("runSweep", () => {
    it("measures every configuration with the baselines of the same run on a bigram pair", async () => {
        const {target, draft} = skewedBigramPair(5);
        const items = await targetReferenceBattery(target);
        const result = await runSweep({
            target,
            draft,
            items,
            gammas: [2, 3],
            sampling,
            maxTokens: 4,
            seed: 0,
            policies: [
                {kind: "fuzzy", divergence: "js", threshold: 0.1, distribution: "raw"},
                {kind: "fuzzy", divergence: "js", threshold: 0.6, distribution: "raw"},
                {kind: "strict"}
            ]
        });
        const byLabel = new Map(result.points.map((point) => [point.label, point]));
        expect(result.points.map((point) => point.role).slice(0, 3)).toEqual(["target-only", "draft-only", "strict"]);
        // References are the target's greedy outputs: target-only and lossless strict SD score 100%.
        expect(byLabel.get("target-only")!.accuracy).toBe(1);
        expect(byLabel.get("strict γ=2")!.accuracy).toBe(1);
        expect(byLabel.get("strict γ=3")!.accuracy).toBe(1);
        expect(byLabel.get("target-only")!.speedup).toBe(1);
        const draftOnly = byLabel.get("draft-only")!;
        expect(draftOnly.accuracy).toBeLessThan(1);
        // Accepting nearly everything follows the draft on the noisy side and loses accuracy.
        const loose = byLabel.get("fuzzy:js:0.6 γ=3")!;
        expect(loose.accuracy).toBeLessThan(1);
        expect(loose.meanAcceptanceLength).toBeGreaterThan(byLabel.get("strict γ=3")!.meanAcceptanceLength);
        expect(loose.draftTokenShare).toBeGreaterThan(0.5);
        // "strict" in --policies is the baseline, not a second row.
        expect(result.points.filter((point) => point.policy === "strict")).toHaveLength(2);
        // Each relaxed configuration has a random-acceptance twin at its acceptance rate.
        const twins = result.points.filter((point) => point.role === "random-acceptance");
        expect(twins.map((point) => point.matchedTo).sort()).toEqual([
            "fuzzy:js:0.1 γ=2",
            "fuzzy:js:0.1 γ=3",
            "fuzzy:js:0.6 γ=2",
            "fuzzy:js:0.6 γ=3"
        ]);
        for (const twin of twins) expect(twin.acceptanceRate).toBeCloseTo(byLabel.get(twin.matchedTo!)!.acceptanceRate, 0);
        // The random-allocation line runs from draft-only to target-only.
        expect(result.randomAllocation[0]).toMatchObject({share: 0, accuracy: draftOnly.accuracy});
        expect(result.randomAllocation[20]).toMatchObject({share: 1, accuracy: 1});
        // The frontier flags agree with the points, and the fastest of the most accurate points is on it.
        expect(result.points.map((point) => point.onFrontier)).toEqual(paretoFrontier(result.points));
        // One-step verification: the single-model rows keep their measured speed; a speculative row's time is recomputed from its counts.
        expect(byLabel.get("target-only")!.oneStepVerification!.speedup).toBeCloseTo(1, 9);
        expect(draftOnly.oneStepVerification!.tokensPerSecond).toBeCloseTo(draftOnly.tokensPerSecond, 6);
        const strict3 = byLabel.get("strict γ=3")!;
        const targetOnly = byLabel.get("target-only")!;
        const expectedSeconds =
            ((strict3.emittedTokens - strict3.acceptedTokens) * targetOnly.decodeSeconds) / targetOnly.emittedTokens +
            (strict3.draftTokens * draftOnly.decodeSeconds) / draftOnly.emittedTokens;
        expect(strict3.oneStepVerification!.tokensPerSecond).toBeCloseTo(strict3.emittedTokens / expectedSeconds, 6);
        expect(result.points.map((point) => point.oneStepVerification!.onFrontier)).toEqual(
            paretoFrontier(
                result.points.map((point) => ({accuracy: point.accuracy, tokensPerSecond: point.oneStepVerification!.tokensPerSecond}))
            )
        );
        const bestAccuracy = result.points.filter((point) => point.accuracy === 1).sort((a, b) => b.tokensPerSecond - a.tokensPerSecond)[0];
        expect(bestAccuracy.onFrontier).toBe(true);

        const report = renderSweepReport(result, {target: "t.gguf", draft: "d.gguf", battery: "b.jsonl", plot: "plots/frontier.png"});
        expect(report).toContain("| Method | γ | Acc (%) | 95% CI | Tok/s | Spd | ALen | AR | Draft tok. |");
        expect(report).toContain("Pareto frontier, one-step verification speed");
        // Four tokens cut every answer of this pair short, and the report says so.
        expect(report).toMatch(/\*\*\d+ of \d+ target-only answers stopped at --max-tokens \(4\)\*\*/);
        expect(report).toContain("| target-only | – | 100.0 |");
        expect(report).toMatch(/\| fuzzy:js:0\.6 γ=3 \| 3 \| \d+\.\d \| [\d.]+–[\d.]+ \|/);
        expect(report).toContain("![Accuracy vs tokens/s](plots/frontier.png)");
        const svg = renderFrontierChart(result);
        expect(svg).toContain('stroke="#e45756"');
        expect(svg).toContain('stroke-dasharray="6 4"');
        expect(svg.match(/<circle /g)!.length).toBeGreaterThanOrEqual(result.points.length);
    });

    it("adds the score-preserving oracle at each γ, counted like the strict rows, and reports the headroom", async () => {
        const {target, draft} = skewedBigramPair(5);
        const items = await targetReferenceBattery(target);
        const result = await runSweep({
            target,
            draft,
            items,
            gammas: [2, 3],
            sampling,
            maxTokens: 4,
            seed: 0,
            oracle: true,
            policies: [{kind: "fuzzy", divergence: "js", threshold: 0.1, distribution: "raw"}]
        });
        expect(result.oracle!.map((measurement) => measurement.gamma)).toEqual([2, 3]);
        for (const measurement of result.oracle!) {
            const strict = result.points.find((point) => point.label === `strict γ=${measurement.gamma}`)!;
            expect(measurement.strict.meanAcceptanceLength).toBe(strict.meanAcceptanceLength);
            expect(measurement.strict.correct).toBe(strict.correct);
        }
        const report = renderSweepReport(result, {target: "t.gguf", draft: "d.gguf", battery: "b.jsonl"});
        expect(report).toContain("## Headroom: the score-preserving oracle");
        expect(report).toMatch(/\| 3 \| all \| 16 \| 100\.0 \| 100\.0 \| [\d.]+ \| [\d.]+ \| \+0\.0% \| 0 \/ \d+ \|/);
        expect(report).toMatch(
            /- γ = 2: the oracle gains \+0\.0% mean acceptance length over strict SD at no loss; the best policy within 1 point, fuzzy:js:0\.1 γ=2, [+-]\d+\.\d%\./
        );
        // Without the flag the result has no oracle and the report no headroom section.
        const plain = await runSweep({target, draft, items, gammas: [2], sampling, maxTokens: 4, seed: 0, policies: [{kind: "strict"}]});
        expect(plain.oracle).toBeUndefined();
        expect(renderSweepReport(plain, {target: "t", draft: "d", battery: "b"})).not.toContain("Headroom");
    });

    it("refuses the oracle away from temperature 0 before any work", async () => {
        const {target, draft} = skewedBigramPair(5);
        const items = await targetReferenceBattery(target);
        const callsBefore = target.evaluateCalls.length;
        await expect(
            runSweep({
                target,
                draft,
                items,
                gammas: [2],
                sampling: {...sampling, temperature: 0.7},
                maxTokens: 4,
                seed: 0,
                oracle: true,
                policies: [{kind: "strict"}]
            })
        ).rejects.toThrow(/^oracle: is defined for greedy decoding; got temperature 0\.7/);
        expect(target.evaluateCalls.length).toBe(callsBefore);
    });

    it("refuses an empty battery and one it cannot score before loading any work", async () => {
        const {target, draft} = skewedBigramPair(5);
        const base = {target, draft, gammas: [2], sampling, maxTokens: 4, seed: 0, policies: [{kind: "strict" as const}]};
        await expect(runSweep({...base, items: []})).rejects.toThrow(EmptyBatteryError);
        await expect(runSweep({...base, items: [{id: "x", task: "t", prompt: "abc", scorer: "none"}]})).rejects.toThrow(
            ScorerMismatchError
        );
        const items = await targetReferenceBattery(target);
        const callsBefore = target.evaluateCalls.length;
        await expect(runSweep({...base, items, gammas: []})).rejects.toThrow(/^gammas: must be positive integers/);
        expect(target.evaluateCalls.length).toBe(callsBefore);
    });
});
