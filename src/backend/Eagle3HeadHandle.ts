import type {NativeDecodeResult} from "./nativeAddon.js";

/** new Eagle3Head(model, target, sequence, options): the head's own context. */
export interface NativeEagle3HeadOptions {
    /** Positions the head's KV cache holds (the target sequence's context size). */
    contextSize: number;
    threads: number;
}

/** How drawDrafts draws: the sampler settings, the ids its rows cover, and the top probability a row must reach (0: any). */
export interface NativeEagle3DrawOptions {
    sampling: {temperature: number; topK: number; topP: number; minP: number};
    size: number;
    minConfidence: number;
    /**
     * Keep the sampler rows in the head (drawnAt reads them) and write only the ids and, per token, its
     * probability in its row (probabilities holds uniforms.length values; logits is not written).
     */
    keepRows?: boolean;
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
    /**
     * Catches up as draft does, then draws uniforms.length tokens, each from the sampler row of the
     * head's logits over ids [0, options.size) (processLogits' steps with options.sampling) with one
     * uniform each (SeededChance.choose's inverse CDF), feeding each back to draw the next: γ sampled
     * drafts in one call. Stops where a row's top probability is below options.minConfidence. Writes
     * the ids (−1 past the draft's end) and, options.size values per token, the sampler rows and logits.
     */
    drawDrafts(
        history: Int32Array,
        uniforms: Float64Array,
        options: NativeEagle3DrawOptions,
        ids: Int32Array,
        probabilities: Float64Array,
        logits: Float64Array
    ): Promise<NativeDecodeResult>;
    /** drawDrafts on the calling thread, as draftNow. */
    drawDraftsNow(
        history: Int32Array,
        uniforms: Float64Array,
        options: NativeEagle3DrawOptions,
        ids: Int32Array,
        probabilities: Float64Array,
        logits: Float64Array
    ): NativeDecodeResult | null;
    /**
     * The sampler row `row` of the last drawDrafts with options.keepRows, at `ids` (one value each, 0 outside
     * the rows' ids) or, with null, whole (options.size values), written into `destination`; a RangeError
     * where `row` held no drawn token. Absent on a handle that does not keep rows.
     */
    drawnAt?(row: number, ids: Int32Array | null, destination: Float64Array): void;
    /** Idempotent; a call in flight finishes first. */
    dispose(): void;
}

/** new Eagle3HeadGroup(model, target, options): one head context for `slots` target sequences. */
export interface NativeEagle3HeadGroupOptions extends NativeEagle3HeadOptions {
    /** Head sequences: the target's slots (at most its context's sequences). */
    slots: number;
}

/** One slot's greedy ids (Int32Array of `count`) or first draft row (Float64Array, count 1), as NativeEagle3HeadHandle.draft. */
export interface NativeEagle3GroupDraft {
    slot: number;
    history: Int32Array;
    count: number;
    destination: Int32Array | Float64Array;
}

/** One slot's sampled drafts, as NativeEagle3HeadHandle.drawDrafts. */
export interface NativeEagle3GroupDraw {
    slot: number;
    history: Int32Array;
    uniforms: Float64Array;
    options: NativeEagle3DrawOptions;
    ids: Int32Array;
    probabilities: Float64Array;
    logits: Float64Array;
}

/**
 * An EAGLE-3 head context shared by the slots of a target context (native/src/Eagle3HeadGroup.cpp),
 * one head sequence per slot: `draft` runs several slots' drafts in shared llama_decode calls (their
 * catch-ups together, then one decode per draft iteration holding one token of every slot still
 * drafting), each slot's tokens from its own rows and uniforms. Calls run on libuv's worker pool,
 * one at a time.
 */
export interface NativeEagle3HeadGroupHandle {
    readonly vocabularySize: number;
    /** Head sequences the group holds. */
    readonly slots: number;
    /** A free slot drafting for `targetSequence`, holding nothing of an earlier request; a RangeError when all are open. */
    open(targetSequence: number): number;
    /** Frees `slot`; what it holds is dropped before it drafts again. */
    close(slot: number): void;
    /** Each request drafts for its own open slot; result.groups[i] is request i's (its error: no draft, the rows were not captured). */
    draft(requests: ReadonlyArray<NativeEagle3GroupDraft | NativeEagle3GroupDraw>): Promise<NativeDecodeResult>;
    /** The drafted `token` at the slot's next position, as NativeEagle3HeadHandle.next. */
    next(slot: number, token: number, destination: Int32Array | Float64Array): Promise<NativeDecodeResult>;
    /** The sampler row `row` of the slot's last draw with options.keepRows, as NativeEagle3HeadHandle.drawnAt; never waits for a call. */
    drawnAt(slot: number, row: number, ids: Int32Array | null, destination: Float64Array): void;
    /** Idempotent; a call in flight finishes first. */
    dispose(): void;
}
