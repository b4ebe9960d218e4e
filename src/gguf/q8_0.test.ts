import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../errors.js";
import {float16BitsToFloat32} from "./float16.js";
import {dequantizeQ8_0, quantizeQ8_0} from "./q8_0.js";

describe("Q8_0", () => {
    it("lays out each block as an fp16 scale followed by 32 int8 quants", () => {
        const values = new Float32Array(64);
        for (let i = 0; i < 32; i++) values[i] = (i - 16) / 4; // max |x| = 4 → d = 4/127
        values[32 + 5] = -1; // second block: one value, the rest zero
        const bytes = quantizeQ8_0(values);
        expect(bytes.length).toBe(2 * 34);

        const view = new DataView(bytes.buffer);
        expect(float16BitsToFloat32(view.getUint16(0, true))).toBeCloseTo(4 / 127, 4);
        expect(view.getInt8(2 + 0)).toBe(-127); // -4 / d
        expect(view.getInt8(2 + 16)).toBe(0);
        expect(view.getInt8(2 + 18)).toBe(16); // 0.5 / (4/127) = 15.875
        expect(float16BitsToFloat32(view.getUint16(34, true))).toBeCloseTo(1 / 127, 5);
        expect(view.getInt8(34 + 2 + 5)).toBe(-127);
        expect(view.getInt8(34 + 2 + 6)).toBe(0);
    });

    it("rounds half away from zero like C roundf", () => {
        // d = 127/127 = 1, so the quants are round(x) directly.
        const values = new Float32Array(32);
        values[0] = 127;
        values[1] = 2.5;
        values[2] = -2.5;
        values[3] = 0.49;
        const view = new DataView(quantizeQ8_0(values).buffer);
        expect(view.getInt8(2 + 1)).toBe(3);
        expect(view.getInt8(2 + 2)).toBe(-3);
        expect(view.getInt8(2 + 3)).toBe(0);
    });

    it("dequantises within half a quantisation step", () => {
        const values = new Float32Array(32 * 8);
        for (let i = 0; i < values.length; i++) values[i] = Math.fround(Math.sin(i * 0.37) * (1 + (i % 7)));
        const bytes = quantizeQ8_0(values);
        const restored = dequantizeQ8_0(bytes, values.length);
        for (let block = 0; block < 8; block++) {
            const scale = float16BitsToFloat32(new DataView(bytes.buffer).getUint16(block * 34, true));
            for (let i = block * 32; i < (block + 1) * 32; i++)
                // Half a step, plus the fp16 rounding of the scale (relative 2^-11) times |q| ≤ 127.
                expect(Math.abs(restored[i] - values[i])).toBeLessThanOrEqual(scale / 2 + 127 * scale * 2 ** -11 + 1e-7);
        }
    });

    it("stores an all-zero block with scale 0", () => {
        const bytes = quantizeQ8_0(new Float32Array(32));
        expect([...bytes]).toEqual(new Array(34).fill(0));
        expect([...dequantizeQ8_0(bytes, 32)]).toEqual(new Array(32).fill(0));
    });

    it("rejects a length that is not a multiple of 32", () => {
        expect(() => quantizeQ8_0(new Float32Array(33))).toThrow(InvalidInputError);
    });
});
