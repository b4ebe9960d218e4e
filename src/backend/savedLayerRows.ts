/**
 * The bytes of a saved sequence state (NativeContextHandle.saveSequence) that hold the target's
 * captured layer rows: with captureLayers, the addon writes them after llama.cpp's state (each
 * position's token and one row of every tapped layer, 4-byte floats), then a footer of llama.cpp's
 * byte count (u64) and savedLayerRowsMagic (u64). 0 for a state without them (or another backend's).
 */
export function savedLayerRowBytes(data: Uint8Array): number {
    const llamaBytes = savedLlamaStateBytes(data);
    return llamaBytes === undefined ? 0 : data.byteLength - llamaBytes;
}

/** llama.cpp's part of a saved state that carries layer rows (their offset); undefined for one without. */
export function savedLlamaStateBytes(data: Uint8Array): number | undefined {
    if (data.byteLength < savedLayerRowsFooterBytes) return undefined;
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    if (view.getBigUint64(data.byteLength - 8, true) !== savedLayerRowsMagic) return undefined;
    const llamaBytes = view.getBigUint64(data.byteLength - savedLayerRowsFooterBytes, true);
    return llamaBytes > BigInt(data.byteLength - savedLayerRowsFooterBytes) ? undefined : Number(llamaBytes);
}

/** The footer's magic ("SGE3LRWS" little-endian), as native/src/Eagle3Tap.h writes it. */
export const savedLayerRowsMagic = 0x5357524c33454753n;
export const savedLayerRowsFooterBytes = 16;
