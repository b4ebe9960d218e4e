import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../errors.js";
import {stratifiedBootstrap} from "./stratifiedBootstrap.js";

const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;

describe("stratifiedBootstrap", () => {
    const sample = [3.1, 2.4, 5.0, 4.2, 3.3, 2.9, 4.8, 3.7, 4.1, 2.2];

    it("is deterministic for a seed and changes with the seed", () => {
        const statistic = (strata: readonly (readonly number[])[]) => mean(strata[0]);
        const first = stratifiedBootstrap([sample], statistic, {seed: 11, resamples: 500});
        expect(stratifiedBootstrap([sample], statistic, {seed: 11, resamples: 500})).toEqual(first);
        const other = stratifiedBootstrap([sample], statistic, {seed: 12, resamples: 500});
        expect([other.low, other.high]).not.toEqual([first.low, first.high]);
        expect(first.estimate).toBeCloseTo(3.57, 12);
        expect(first.low).toBeLessThan(first.estimate);
        expect(first.high).toBeGreaterThan(first.estimate);
    });

    it("covers the mean with about the normal-theory width", () => {
        // s = 0.9226, n = 10: the normal interval is 3.57 ± 1.96·0.9226/√10 = [2.998, 4.142]; the
        // bootstrap uses the plug-in (n rather than n − 1) spread, so it is slightly narrower.
        const interval = stratifiedBootstrap([sample], (strata) => mean(strata[0]), {seed: 3, resamples: 4000});
        expect(interval.low).toBeGreaterThan(2.9);
        expect(interval.low).toBeLessThan(3.2);
        expect(interval.high).toBeGreaterThan(3.95);
        expect(interval.high).toBeLessThan(4.25);
        expect(interval.resamples).toBe(4000);
    });

    it("keeps each stratum's size and draws only from that stratum", () => {
        const seen: Array<[number, number]> = [];
        stratifiedBootstrap(
            [
                [1, 1, 1],
                [7, 7]
            ],
            (strata) => {
                seen.push([strata[0].length, strata[1].length]);
                expect(strata[0].every((value) => value === 1) && strata[1].every((value) => value === 7)).toBe(true);
                return 0;
            },
            {seed: 1, resamples: 20}
        );
        expect(new Set(seen.map(String))).toEqual(new Set(["3,2"]));
    });

    it("rejects empty strata and bad settings", () => {
        expect(() => stratifiedBootstrap([[1], []], () => 0, {seed: 1})).toThrow(InvalidInputError);
        expect(() => stratifiedBootstrap([[1]], () => 0, {seed: 1, resamples: 0})).toThrow(/resamples/);
        expect(() => stratifiedBootstrap([[1]], () => 0, {seed: 1, confidence: 1})).toThrow(/confidence/);
    });
});
