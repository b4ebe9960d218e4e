import {float16BitsToFloat32, float32ToFloat16Bits} from "./float16.js";
import {q8_0BlockBytes, q8_0BlockSize} from "./GgmlTensorType.js";
import {InvalidInputError} from "../errors.js";

/**
 * Q8_0 quantisation as ggml's reference `quantize_row_q8_0_ref` does it: per block of 32 values,
 * d = max|x| / 127, q = round(x / d) half away from zero (C `roundf`), stored as fp16(d) then 32 int8.
 * The arithmetic is done in float32 (Math.fround) so the quants equal the C reference's.
 */
export function quantizeQ8_0(values: Float32Array): Uint8Array {
    if (values.length % q8_0BlockSize !== 0)
        throw new InvalidInputError(`Q8_0 needs a multiple of ${q8_0BlockSize} values, got ${values.length}`);

    const blockCount = values.length / q8_0BlockSize;
    const bytes = new Uint8Array(blockCount * q8_0BlockBytes);
    const view = new DataView(bytes.buffer);
    for (let block = 0; block < blockCount; block++) {
        const start = block * q8_0BlockSize;
        let absoluteMax = 0;
        for (let i = 0; i < q8_0BlockSize; i++) absoluteMax = Math.max(absoluteMax, Math.abs(values[start + i]));

        const scale = Math.fround(absoluteMax / 127);
        const inverseScale = scale !== 0 ? Math.fround(1 / scale) : 0;
        const offset = block * q8_0BlockBytes;
        view.setUint16(offset, float32ToFloat16Bits(scale), true);
        for (let i = 0; i < q8_0BlockSize; i++) {
            const scaled = Math.fround(values[start + i] * inverseScale);
            const quant = Math.sign(scaled) * Math.round(Math.abs(scaled));
            view.setInt8(offset + 2 + i, quant);
        }
    }
    return bytes;
}

/** Inverse of `quantizeQ8_0` up to the quantisation error: x = q * fp16(d). */
export function dequantizeQ8_0(bytes: Uint8Array, elementCount: number): Float32Array {
    const blockCount = elementCount / q8_0BlockSize;
    if (!Number.isInteger(blockCount) || bytes.length < blockCount * q8_0BlockBytes)
        throw new InvalidInputError(`Q8_0 data of ${bytes.length} bytes cannot hold ${elementCount} values`);

    const values = new Float32Array(elementCount);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let block = 0; block < blockCount; block++) {
        const offset = block * q8_0BlockBytes;
        const scale = float16BitsToFloat32(view.getUint16(offset, true));
        for (let i = 0; i < q8_0BlockSize; i++) values[block * q8_0BlockSize + i] = view.getInt8(offset + 2 + i) * scale;
    }
    return values;
}
