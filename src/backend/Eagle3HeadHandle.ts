import type {NativeDecodeResult} from "./nativeAddon.js";

/** new Eagle3Head(model, target, sequence, options): the head's own context. */
export interface NativeEagle3HeadOptions {
    /** Positions the head's KV cache holds (the target sequence's context size). */
    contextSize: number;
    threads: number;
}

/**
 * An EAGLE-3 head drafting for one sequence of a target context created with captureLayers
 * (native/src/Eagle3Head.cpp): calls run on libuv's worker pool, one at a time. `draft` brings the
 * head up to a target sequence holding every token of `history` but the last (the pending token; the
 * target layers' rows were captured when the target decoded them), then writes `count` greedy ids
 * (Int32Array) or the first draft position's logit row (Float64Array of vocabularySize, count 1);
 * `next` feeds a drafted token and writes the following row or id. A result whose groups[0].error is
 * set drafted nothing (the rows the head needs were not captured for this history: the target's
 * cells came from a saved state).
 */
export interface NativeEagle3HeadHandle {
    /** Length of the head's logit rows (its vocabulary; a reduced draft vocabulary is mapped back to it inside the graph). */
    readonly vocabularySize: number;
    draft(history: Int32Array, count: number, destination: Int32Array | Float64Array): Promise<NativeDecodeResult>;
    next(token: number, destination: Int32Array | Float64Array): Promise<NativeDecodeResult>;
    /**
     * draft on the calling thread, blocking the event loop for its duration, for calls shorter than a
     * thread hop (a tiny head's step); null, having done nothing, when another call holds the head or the CPU.
     */
    draftNow(history: Int32Array, count: number, destination: Int32Array | Float64Array): NativeDecodeResult | null;
    /** next on the calling thread, as draftNow. */
    nextNow(token: number, destination: Int32Array | Float64Array): NativeDecodeResult | null;
    /** Idempotent; a call in flight finishes first. */
    dispose(): void;
}
