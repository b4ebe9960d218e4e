import {describe, expect, it} from "vitest";

import {InvalidInputError} from "../errors.js";
import {medianInterval} from "./medianInterval.js";

describe("medianInterval", () => {
    it("is the range of the values, with its true confidence, when there are too few for 95%", () => {
        // 1 − 2 · 0.5^3 = 0.75: three rounds all faster is a sign test at p = 0.125.
        expect(medianInterval([1.2, 1.1, 1.3])).toEqual({low: 1.1, high: 1.3, confidence: 0.75});
        expect(medianInterval([5, 1, 2, 4, 3]).confidence).toBeCloseTo(0.9375, 12);
        expect(medianInterval([7])).toEqual({low: 7, high: 7, confidence: 0});
    });

    it("narrows to inner order statistics once they keep 95%", () => {
        // n = 6: [x(1), x(6)] has 1 − 2/64 = 0.969; [x(2), x(5)] only 1 − 2·7/64 = 0.781.
        expect(medianInterval([6, 1, 5, 2, 4, 3])).toMatchObject({low: 1, high: 6, confidence: expect.closeTo(0.96875, 12)});
        // n = 20: rank 6 covers 1 − 2·P(Bin(20, ½) ≤ 5) = 0.9586, rank 7 only 0.8847.
        const twenty = Array.from({length: 20}, (_, index) => index + 1);
        expect(medianInterval(twenty)).toMatchObject({low: 6, high: 15, confidence: expect.closeTo(0.958611, 6)});
    });

    it("rejects no values and a confidence outside (0, 1)", () => {
        expect(() => medianInterval([])).toThrow(InvalidInputError);
        expect(() => medianInterval([1, 2], 1)).toThrow(/confidence/);
    });
});
