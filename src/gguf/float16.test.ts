import {describe, expect, it} from "vitest";
import {float16BitsToFloat32, float32ArrayToFloat16Bits, float32ToFloat16Bits} from "./float16.js";

describe("float16", () => {
    it("encodes known values", () => {
        expect(float32ToFloat16Bits(1)).toBe(0x3c00);
        expect(float32ToFloat16Bits(-2)).toBe(0xc000);
        expect(float32ToFloat16Bits(0.5)).toBe(0x3800);
        expect(float32ToFloat16Bits(65504)).toBe(0x7bff); // largest finite half
        expect(float32ToFloat16Bits(65520)).toBe(0x7c00); // rounds up to Inf
        expect(float32ToFloat16Bits(-Infinity)).toBe(0xfc00);
        expect(float32ToFloat16Bits(-0)).toBe(0x8000);
        expect(float32ToFloat16Bits(2 ** -14)).toBe(0x0400); // smallest normal
        expect(float32ToFloat16Bits(2 ** -24)).toBe(0x0001); // smallest subnormal
        expect(float16BitsToFloat32(float32ToFloat16Bits(NaN))).toBeNaN();
    });

    it("rounds ties to even, in normals and subnormals", () => {
        expect(float32ToFloat16Bits(1 + 2 ** -11)).toBe(0x3c00); // halfway, even stays
        expect(float32ToFloat16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02); // halfway, odd rounds up
        expect(float32ToFloat16Bits(1 + 2 ** -11 + 2 ** -20)).toBe(0x3c01); // above halfway
        expect(float32ToFloat16Bits(2 ** -25)).toBe(0x0000); // half the smallest subnormal → 0 (even)
        expect(float32ToFloat16Bits(3 * 2 ** -25)).toBe(0x0002);
        expect(float32ToFloat16Bits(2047 * 2 ** -25)).toBe(0x0400); // subnormal rounding carries into the smallest normal
    });

    it("decodes and re-encodes every non-NaN half exactly", () => {
        const mismatches: Array<{bits: number; reencoded: number}> = [];
        for (let bits = 0; bits < 0x10000; bits++) {
            const value = float16BitsToFloat32(bits);
            if (Number.isNaN(value)) continue;
            const reencoded = float32ToFloat16Bits(value);
            if (reencoded !== bits) mismatches.push({bits, reencoded});
        }
        expect(mismatches).toEqual([]);
    });

    it("picks the nearest half for random floats", () => {
        let state = 12345;
        for (let i = 0; i < 2000; i++) {
            state = (Math.imul(state, 1103515245) + 12345) >>> 0;
            const value = Math.fround((state / 2 ** 32 - 0.5) * 2 ** ((i % 30) - 15));
            const encoded = float16BitsToFloat32(float32ToFloat16Bits(value));
            // No other half is closer: check both neighbours of the encoded value.
            const bits = float32ToFloat16Bits(value);
            for (const neighbour of [bits - 1, bits + 1]) {
                if ((neighbour & 0x7fff) > 0x7bff || neighbour < 0) continue;
                expect(Math.abs(float16BitsToFloat32(neighbour) - value)).toBeGreaterThanOrEqual(Math.abs(encoded - value));
            }
        }
    });

    it("encodes an array as the one-value encoder does, over every float32 exponent, specials and a subarray", () => {
        const words = new Uint32Array(1 << 16);
        let state = 99;
        for (let i = 0; i < words.length; i++) {
            state = (Math.imul(state, 1103515245) + 12345) >>> 0;
            // Every exponent (0..255, so subnormals, overflow, Inf and NaN) with a random sign and mantissa.
            words[i] = ((i & 0xff) << 23) | (state & 0x807fffff);
        }
        const values = new Float32Array(words.buffer);
        values.set([0, -0, 65504, 65520, 2 ** -24, 2 ** -25, 1 + 2 ** -11, 1 + 3 * 2 ** -11], 0);
        const expectAsOneByOne = (array: Float32Array): void => {
            expect(Array.from(float32ArrayToFloat16Bits(array))).toEqual(Array.from(array, (value) => float32ToFloat16Bits(value)));
        };
        expectAsOneByOne(values);
        expectAsOneByOne(values.subarray(3, 1000));
    });
});
