import {describe, expect, it} from "vitest";

import {InvalidInputError} from "../errors.js";
import {mcnemarExact} from "./mcnemarExact.js";

describe("mcnemarExact", () => {
    it.each([
        // b, c, p — by hand: p = min(1, 2 · Σ_{k ≤ min(b,c)} C(b+c, k) / 2^(b+c))
        [0, 2, 0.5], // 2 · 1/4; the TAIS paper reports p = 0.5 for a pair with 2–4 discordant prompts
        [1, 3, 0.625], // 2 · (1 + 4)/16; the TAIS paper reports p = 0.625
        [1, 1, 1], // 2 · 3/4 = 1.5, capped
        [2, 2, 1], // 2 · 11/16, capped
        [0, 5, 0.0625], // 2 · 1/32
        [1, 9, 0.021484375], // 2 · (1 + 10)/1024
        [7, 2, 0.1796875] // 2 · (1 + 9 + 36)/512
    ])("b = %i, c = %i gives p = %f", (b, c, expected) => {
        expect(mcnemarExact(b, c)).toBeCloseTo(expected, 12);
    });

    it("is symmetric in b and c", () => {
        expect(mcnemarExact(3, 11)).toBeCloseTo(mcnemarExact(11, 3), 14);
    });

    it("returns 1 without discordant pairs", () => {
        expect(mcnemarExact(0, 0)).toBe(1);
    });

    it("rejects negative or fractional counts", () => {
        expect(() => mcnemarExact(-1, 2)).toThrow(InvalidInputError);
        expect(() => mcnemarExact(1, 2.5)).toThrow(/speculativeOnlyPasses/);
    });
});
