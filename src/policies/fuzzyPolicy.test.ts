import {describe, expect, it} from "vitest";
import {jensenShannon} from "../divergences/divergences.js";
import {SeededChance} from "../random/SeededChance.js";
import {createFuzzyPolicy} from "./fuzzyPolicy.js";

describe("fuzzy policy with a q-less proposal", () => {
    const row = (...values: number[]) => Float64Array.from(values);

    it("compares the target row with δ_x (processed rows)", () => {
        const policy = createFuzzyPolicy({divergence: "js", threshold: 0.2, distribution: "processed"});
        const targetProbs = [row(0.05, 0.9, 0.05), row(0.5, 0.5, 0), row(0.2, 0.3, 0.5)];
        const result = policy.verify({draftTokens: [1, 0], targetProbs}, new SeededChance(1));
        const expected = [jensenShannon(targetProbs[0], row(0, 1, 0)), jensenShannon(targetProbs[1], row(1, 0, 0))];
        expect(result.positions.map((position) => position.values.divergence)).toEqual(expected);
        expect(expected[0]).toBeLessThan(0.2);
        expect(expected[1]).toBeGreaterThan(0.2);
        expect(result.acceptedCount).toBe(1);
        // The δ row is scratch: a second step gives the same values (nothing left set from the first).
        const again = policy.verify({draftTokens: [1, 0], targetProbs}, new SeededChance(1));
        expect(again.positions.map((position) => position.values.divergence)).toEqual(expected);
    });

    it("uses δ_x on raw target logits when there are no draft logits, and accepts x only as p(x) approaches 1", () => {
        const policy = createFuzzyPolicy({divergence: "js", threshold: 0.05, distribution: "raw"});
        const confident = row(0, 10, 0);
        const unsure = row(0, 0.1, 0);
        const step = (logits: Float64Array) => ({
            draftTokens: [1],
            targetProbs: [row(0, 1, 0), row(0, 1, 0)],
            targetLogits: [logits, logits]
        });
        expect(policy.verify(step(confident), new SeededChance(0)).acceptedCount).toBe(1);
        expect(policy.verify(step(unsure), new SeededChance(0)).acceptedCount).toBe(0);
    });
});
