import {describe, expect, it} from "vitest";
import {paretoFrontier} from "./paretoFrontier.js";

describe("paretoFrontier", () => {
    it("keeps exactly the points no other point beats on both accuracy and speed", () => {
        const points = [
            {accuracy: 0.9, tokensPerSecond: 10}, // target-like: most accurate
            {accuracy: 0.7, tokensPerSecond: 40}, // draft-like: fastest
            {accuracy: 0.88, tokensPerSecond: 20}, // trade-off
            {accuracy: 0.85, tokensPerSecond: 18}, // dominated by the trade-off point
            {accuracy: 0.9, tokensPerSecond: 9}, // same accuracy as the first, slower
            {accuracy: 0.8, tokensPerSecond: 30} // trade-off
        ];
        expect(paretoFrontier(points)).toEqual([true, true, true, false, false, true]);
    });

    it("keeps every copy of a tied optimal point and drops non-finite points", () => {
        expect(
            paretoFrontier([
                {accuracy: 0.5, tokensPerSecond: 10},
                {accuracy: 0.5, tokensPerSecond: 10},
                {accuracy: Number.NaN, tokensPerSecond: 99}
            ])
        ).toEqual([true, true, false]);
        expect(paretoFrontier([])).toEqual([]);
    });
});
