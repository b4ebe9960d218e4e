/**
 * IEEE 754 binary16 conversion. Node 20 has no Float16Array / Math.f16round, so the bits are built by
 * hand. Rounding is round-to-nearest-even, the mode of ggml's F16C / reference conversion, so a value
 * written here reads back exactly as llama.cpp would have stored it.
 */
const floatView = new Float32Array(1);
const bitsView = new Uint32Array(floatView.buffer);

/** The binary16 bit pattern (0..0xFFFF) nearest to `value` (rounded to float32 first). */
export function float32ToFloat16Bits(value: number): number {
    floatView[0] = value;
    const bits = bitsView[0];
    const sign = (bits >>> 16) & 0x8000;
    const exponent = (bits >>> 23) & 0xff;
    const mantissa = bits & 0x7fffff;

    if (exponent === 0xff)
        // Inf stays Inf; NaN keeps a payload bit so it stays NaN
        return sign | 0x7c00 | (mantissa !== 0 ? 0x200 | (mantissa >>> 13) : 0);

    const halfExponent = exponent - 127 + 15;
    if (halfExponent >= 0x1f) return sign | 0x7c00;

    if (halfExponent <= 0) {
        // Subnormal half: value = m * 2^-24 with m = fullMantissa * 2^(exponent - 126).
        const shift = 126 - exponent;
        if (shift > 24) return sign;
        const fullMantissa = mantissa | 0x800000;
        return sign | roundShiftRightEven(fullMantissa, shift);
    }

    // Normal half; a carry out of the mantissa correctly bumps the exponent (up to Inf).
    const truncated = (halfExponent << 10) | (mantissa >>> 13);
    const remainder = mantissa & 0x1fff;
    const roundUp = remainder > 0x1000 || (remainder === 0x1000 && (truncated & 1) === 1);
    return sign | (truncated + (roundUp ? 1 : 0));
}

/**
 * `float32ToFloat16Bits` of every value, in one pass over the float32 bits (no call per value):
 * what writing a large F16 tensor needs.
 */
export function float32ArrayToFloat16Bits(values: Float32Array): Uint16Array {
    const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
    const halves = new Uint16Array(values.length);
    for (let i = 0; i < bits.length; i++) {
        const word = bits[i];
        const sign = (word >>> 16) & 0x8000;
        const exponent = (word >>> 23) & 0xff;
        const halfExponent = exponent - 112;
        if (halfExponent > 0 && halfExponent < 0x1f) {
            const mantissa = word & 0x7fffff;
            const truncated = (halfExponent << 10) | (mantissa >>> 13);
            const remainder = mantissa & 0x1fff;
            halves[i] = sign | (truncated + (remainder > 0x1000 || (remainder === 0x1000 && (truncated & 1) === 1) ? 1 : 0));
        } else halves[i] = float32ToFloat16Bits(values[i]);
    }
    return halves;
}

/** The number a binary16 bit pattern denotes. */
export function float16BitsToFloat32(halfBits: number): number {
    const sign = (halfBits & 0x8000) !== 0 ? -1 : 1;
    const exponent = (halfBits >>> 10) & 0x1f;
    const mantissa = halfBits & 0x3ff;
    if (exponent === 0) return sign * mantissa * 2 ** -24;
    if (exponent === 0x1f) return mantissa === 0 ? sign * Infinity : NaN;
    return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

function roundShiftRightEven(value: number, shift: number): number {
    const truncated = value >>> shift;
    const remainder = value - truncated * 2 ** shift;
    const half = 2 ** (shift - 1);
    if (remainder > half || (remainder === half && (truncated & 1) === 1)) return truncated + 1;
    return truncated;
}
