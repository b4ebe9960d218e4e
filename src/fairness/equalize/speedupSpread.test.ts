import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../../errors.js";
import {classifyGammaChoice, speedupSpread} from "./speedupSpread.js";

describe("speedupSpread", () => {
    it("names the extremes and gives max/min and the population variance", () => {
        // Mean 2; variance (1 + 0 + 1) / 3.
        expect(
            speedupSpread([
                {name: "de", speedup: 2},
                {name: "ja", speedup: 1},
                {name: "en", speedup: 3}
            ])
        ).toEqual({fastestGroup: "en", slowestGroup: "ja", maxMinRatio: 3, variance: 2 / 3});
        // Mean 0.9; variance ((0.1)² + (0.1)²) / 2 = 0.01.
        const spread = speedupSpread([
            {name: "en", speedup: 1},
            {name: "ja", speedup: 0.8}
        ]);
        expect(spread.maxMinRatio).toBeCloseTo(1.25, 12);
        expect(spread.variance).toBeCloseTo(0.01, 12);
    });

    it("is 1 and 0 for equal speed-ups, naming the first group", () => {
        expect(
            speedupSpread([
                {name: "x", speedup: 2},
                {name: "y", speedup: 2}
            ])
        ).toEqual({fastestGroup: "x", slowestGroup: "x", maxMinRatio: 1, variance: 0});
        expect(() => speedupSpread([])).toThrow(InvalidInputError);
    });
});

describe("classifyGammaChoice", () => {
    it("tells no change, one new global γ and a per-group assignment apart", () => {
        expect(classifyGammaChoice(4, [4, 4, 4])).toBe("all-at-global-gamma");
        expect(classifyGammaChoice(4, [1, 1, 1])).toBe("one-gamma-for-all");
        expect(classifyGammaChoice(4, [1, 4, 1])).toBe("per-group-gamma");
        expect(classifyGammaChoice(2, [3, 5])).toBe("per-group-gamma");
        expect(() => classifyGammaChoice(4, [])).toThrow(InvalidInputError);
    });
});
