import {type NativeContextHandle, type NativeDecodeResult, NativeOutputMode} from "../nativeAddon.js";

/** Decodes `tokens` into sequence `sequence` of `context` from position 0, reading no rows (a target's prefill). */
export function prefillSequence(context: NativeContextHandle, tokens: Int32Array, sequence = 0): Promise<NativeDecodeResult> {
    return context.decode(
        tokens,
        new Int32Array(tokens.length).fill(sequence),
        Int32Array.from(tokens, (_token, index) => index),
        [{outputs: new Int32Array(0), mode: NativeOutputMode.None}]
    );
}
