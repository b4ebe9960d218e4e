import {describe, expect, it} from "vitest";

import {InvalidInputError} from "../errors.js";
import {cohensH} from "./cohensH.js";

describe("cohensH", () => {
    // The TAIS paper Table 3 (E5, fp16 = target, bf16 = speculative) and published h.
    // The published rates are themselves rounded to three decimals, so h recomputed from them can
    // differ from the published h in the third decimal by rounding (0.408 → 0.435 gives 0.05469,
    // published 0.054): check within one unit of the third decimal and the exact sign.
    it.each([
        [0.79, 0.78, -0.024],
        [0.583, 0.575, -0.016],
        [0.56, 0.553, -0.014],
        [0.97, 0.97, 0.0],
        [0.408, 0.435, 0.054],
        [0.48, 0.503, 0.046],
        [0.98, 0.98, 0.0],
        [0.575, 0.593, 0.036],
        [0.51, 0.486, -0.048]
    ])("Table 3: target %f, speculative %f gives h = %f", (target, speculative, published) => {
        const h = cohensH(speculative, target);
        expect(Math.abs(h - published)).toBeLessThan(0.001);
        expect(Math.sign(Math.round(h * 1000))).toBe(Math.sign(published));
    });

    it("Table 4: E5 llama row gives −0.0243 and matched equal rows give 0", () => {
        expect(cohensH(0.78, 0.79)).toBeCloseTo(-0.0243, 4);
        expect(cohensH(0.79, 0.79)).toBe(0);
        expect(cohensH(0.97, 0.97)).toBe(0);
        expect(cohensH(0.98, 0.98)).toBe(0);
    });

    it("is spec minus target, so swapping the arms flips the sign", () => {
        expect(cohensH(0.435, 0.408)).toBeCloseTo(-cohensH(0.408, 0.435), 12);
        expect(cohensH(0.435, 0.408)).toBeGreaterThan(0);
        expect(cohensH(0.408, 0.435)).toBeLessThan(0);
    });

    it("reaches π between the extremes", () => {
        // 2·asin(1) − 2·asin(0) = π.
        expect(cohensH(1, 0)).toBeCloseTo(Math.PI, 12);
    });

    it("rejects values outside [0, 1]", () => {
        expect(() => cohensH(1.1, 0.5)).toThrow(InvalidInputError);
        expect(() => cohensH(0.5, Number.NaN)).toThrow(/targetProportion/);
    });
});
