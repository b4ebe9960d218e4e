import {describe, expect, it} from "vitest";

import {Random} from "../../random/Random.js";
import {chooseGroups} from "./mitigationStep.js";

describe("chooseGroups", () => {
    it("trains every group when groupsPerStep is null or covers them all, without drawing", () => {
        const random = new Random(1);
        expect(chooseGroups(random, 4, null)).toEqual([0, 1, 2, 3]);
        expect(chooseGroups(random, 4, 5)).toEqual([0, 1, 2, 3]);
    });

    it("draws groupsPerStep distinct groups in set order, and different ones across steps", () => {
        const random = new Random(7);
        const draws = Array.from({length: 20}, () => chooseGroups(random, 8, 5));
        for (const draw of draws) {
            expect(draw).toHaveLength(5);
            expect(new Set(draw).size).toBe(5);
            expect([...draw].sort((left, right) => left - right)).toEqual(draw);
        }
        expect(new Set(draws.map((draw) => draw.join(","))).size).toBeGreaterThan(1);
    });

    it("keeps at least two groups, so s-CDF has a best group to weigh the others against", () => {
        expect(chooseGroups(new Random(3), 6, 1)).toHaveLength(2);
    });
});
