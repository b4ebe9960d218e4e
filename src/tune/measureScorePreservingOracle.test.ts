import {describe, expect, it} from "vitest";
import type {BatteryItem} from "../batteries/BatteryItem.js";
import {skewedBigramPair} from "../fairness/testing/skewedBigramPair.js";
import {measureConfiguration} from "./measureConfiguration.js";
import {measureScorePreservingOracle} from "./measureScorePreservingOracle.js";
import {targetReferenceBattery} from "./testing/targetReferenceBattery.js";

const sampling = {temperature: 0, topK: 0, topP: 1, minP: 0};

describe("measureScorePreservingOracle", () => {
    it("counts strict SD exactly as the engine does, and the oracle never loses an item strict SD passes", async () => {
        const {target, draft} = skewedBigramPair(5);
        const items = await targetReferenceBattery(target, undefined, 6);
        for (const gamma of [1, 2, 3, 5]) {
            const engine = await measureConfiguration(target, draft, items, {
                policy: {kind: "strict"},
                gamma,
                sampling,
                maxTokens: 6,
                seed: 0
            });
            const measured = await measureScorePreservingOracle(target, draft, items, {gamma, maxTokens: 6});
            expect(measured.strict).toEqual({
                correct: engine.correct,
                drafts: engine.drafts,
                draftTokens: engine.draftTokens,
                acceptedTokens: engine.acceptedTokens,
                meanAcceptanceLength: engine.meanAcceptanceLength,
                rescuedTokens: 0,
                checkedMismatches: 0
            });
            // References are the target's own outputs and exact match admits no other text: nothing is rescued.
            expect(measured.oracle.rescuedTokens).toBe(0);
            expect(measured.oracle.meanAcceptanceLength).toBe(measured.strict.meanAcceptanceLength);
            expect(measured.oracle.checkedMismatches).toBeGreaterThan(0);
            expect(measured.gain).toBe(0);
        }
    });

    it("accepts every mismatch the answer survives and none it does not", async () => {
        const {target, draft} = skewedBigramPair(5);
        const references = await targetReferenceBattery(target, undefined, 6);
        // Only the first output character is graded: every later draft token is neutral, the first one is not.
        const passes = (item: BatteryItem, output: string) => output.charAt(0) === item.reference!.charAt(0);
        const measured = await measureScorePreservingOracle(target, draft, references, {gamma: 3, maxTokens: 6, passes});
        expect(measured.oracle.correct).toBe(references.length);
        expect(measured.strict.correct).toBe(references.length);
        expect(measured.oracle.rescuedTokens).toBeGreaterThan(0);
        expect(measured.gain).toBeGreaterThan(0);
        const byTask = new Map(measured.byTask.map((task) => [task.task, task]));
        // The draft copies the target on the "well" side, so only the "poor" items had mismatches to rescue.
        expect(byTask.get("well")!.oracle.rescuedTokens).toBe(0);
        expect(byTask.get("poor")!.oracle.rescuedTokens).toBe(measured.oracle.rescuedTokens);
        // Only a wrong first token can be refused, and that happens in an item's first step (γ = 3 tokens
        // proposed): after it the oracle accepts every draft token, so at most 3 per item go unaccepted.
        const poor = byTask.get("poor")!;
        const refused = poor.oracle.draftTokens - poor.oracle.acceptedTokens;
        expect(refused % 3).toBe(0);
        expect(refused).toBeLessThanOrEqual(3 * poor.items);
        expect(poor.strict.draftTokens - poor.strict.acceptedTokens).toBeGreaterThan(refused);
        expect(measured.byTask.reduce((sum, task) => sum + task.items, 0)).toBe(references.length);
    });

    it("rejects a bad γ and an empty battery", async () => {
        const {target, draft} = skewedBigramPair(5);
        await expect(measureScorePreservingOracle(target, draft, [], {gamma: 2, maxTokens: 4})).rejects.toThrow(/^items: /);
        await expect(
            measureScorePreservingOracle(target, draft, await targetReferenceBattery(target), {gamma: 0, maxTokens: 4})
        ).rejects.toThrow(/^gamma: /);
    });
});
