/**
 * The tensor element types this writer supports (ggml.h `enum ggml_type`; the numbers are written to
 * the file). F32 and F16 are plain arrays; Q8_0 stores blocks of 32 values as one fp16 scale followed
 * by 32 int8 quants (34 bytes per block).
 */
export enum GgmlTensorType {
    F32 = 0,
    F16 = 1,
    Q8_0 = 8
}

/** Values per Q8_0 block (ggml's QK8_0). */
export const q8_0BlockSize = 32;

/** Bytes per Q8_0 block: a 2-byte fp16 scale and 32 int8 quants. */
export const q8_0BlockBytes = 2 + q8_0BlockSize;

/** Bytes that `elementCount` values occupy when stored as `type`. */
export function ggmlTensorByteLength(type: GgmlTensorType, elementCount: number): number {
    switch (type) {
        case GgmlTensorType.F32:
            return elementCount * 4;
        case GgmlTensorType.F16:
            return elementCount * 2;
        case GgmlTensorType.Q8_0:
            return (elementCount / q8_0BlockSize) * q8_0BlockBytes;
    }
}
