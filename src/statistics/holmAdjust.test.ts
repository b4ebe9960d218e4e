import {describe, expect, it} from "vitest";

import {InvalidInputError} from "../errors.js";
import {holmAdjust} from "./holmAdjust.js";

describe("holmAdjust", () => {
    it("reproduces the textbook four-hypothesis example", () => {
        // Holm–Bonferroni textbook example (also the Wikipedia one): p = 0.01, 0.04, 0.03, 0.005.
        // Sorted: 0.005 × 4 = 0.02; 0.01 × 3 = 0.03; 0.03 × 2 = 0.06; 0.04 × 1 = 0.04 → max(0.06, 0.04) = 0.06.
        // At α = 0.05 H4 and H1 are rejected, H3 and H2 are not.
        const adjusted = holmAdjust([0.01, 0.04, 0.03, 0.005]);
        expect(adjusted[0]).toBeCloseTo(0.03, 12);
        expect(adjusted[1]).toBeCloseTo(0.06, 12);
        expect(adjusted[2]).toBeCloseTo(0.06, 12);
        expect(adjusted[3]).toBeCloseTo(0.02, 12);
        expect(adjusted.map((value) => value < 0.05)).toEqual([true, false, false, true]);
    });

    it("caps at 1 and stays monotone in the sorted order", () => {
        // Sorted 0.2 × 3 = 0.6; 0.5 × 2 = 1.0; 0.9 × 1 = 0.9 → max = 1.0.
        expect(holmAdjust([0.9, 0.2, 0.5])).toEqual([1, expect.closeTo(0.6, 12), 1]);
    });

    it("matches the first Holm threshold of the TAIS paper: α/11 = 0.0045", () => {
        // Eleven contrasts: the smallest p-value is multiplied by 11, so it is significant iff p < 0.05/11.
        const pValues = [0.004, ...new Array<number>(10).fill(0.5)];
        expect(holmAdjust(pValues)[0]).toBeCloseTo(0.044, 12);
        expect(0.05 / 11).toBeCloseTo(0.0045, 4);
    });

    it("handles ties and the empty family", () => {
        expect(holmAdjust([0.01, 0.01])).toEqual([0.02, 0.02]);
        expect(holmAdjust([])).toEqual([]);
    });

    it("rejects values that are not p-values", () => {
        expect(() => holmAdjust([0.1, 1.2])).toThrow(InvalidInputError);
        expect(() => holmAdjust([Number.NaN])).toThrow(/pValues\[0\]/);
    });
});
