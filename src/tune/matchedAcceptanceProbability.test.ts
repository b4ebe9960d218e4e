import {describe, expect, it} from "vitest";
import {createRandomAcceptancePolicy} from "../policies/randomAcceptancePolicy.js";
import {SeededChance} from "../random/SeededChance.js";
import {matchedAcceptanceProbability} from "./matchedAcceptanceProbability.js";

describe("matchedAcceptanceProbability", () => {
    it("is the rate itself for one-token drafts and solves the prefix-acceptance equation otherwise", () => {
        expect(matchedAcceptanceProbability(0.37, [50])).toBeCloseTo(0.37, 12);
        const p = matchedAcceptanceProbability(0.5, [1, 1, 1, 1]);
        expect((p + p ** 2 + p ** 3 + p ** 4) / 4).toBeCloseTo(0.5, 12);
        expect(p).toBeGreaterThan(0.5);
        // Ten steps drafted one token, two drafted three (shorter drafts near the token limit).
        const uneven = matchedAcceptanceProbability(0.4, [12, 2, 2]);
        expect((12 * uneven + 2 * uneven ** 2 + 2 * uneven ** 3) / 16).toBeCloseTo(0.4, 12);
        expect(matchedAcceptanceProbability(0, [1, 1])).toBe(0);
        expect(matchedAcceptanceProbability(1, [1, 1])).toBe(1);
        expect(() => matchedAcceptanceProbability(1.2, [1])).toThrow(/acceptanceRate/);
        expect(() => matchedAcceptanceProbability(0.5, [])).toThrow(/draftedPerPosition/);
    });

    it("makes the random policy accept the requested share of drafted tokens", () => {
        const gamma = 4;
        const rate = 0.45;
        const policy = createRandomAcceptancePolicy({acceptanceProbability: matchedAcceptanceProbability(rate, [1, 1, 1, 1])});
        const chance = new SeededChance(7);
        const row = Float64Array.from([0.25, 0.25, 0.25, 0.25]);
        let accepted = 0;
        const steps = 20_000;
        for (let step = 0; step < steps; step++)
            accepted += policy.verify(
                {draftTokens: [0, 1, 2, 3], targetProbs: Array.from({length: gamma + 1}, () => row)},
                chance
            ).acceptedCount;
        expect(accepted / (steps * gamma)).toBeCloseTo(rate, 2);
    });
});
