import {InlineDecodeChooser} from "./InlineDecodeChooser.js";
import type {EvaluationSplit, LayerSource} from "./ModelBackend.js";
import type {NativeContextHandle, NativeOutputGroup} from "./nativeAddon.js";

/** What decoding one evaluation cost, its row error if any, and how long it waited for a shared batch. */
export interface SlotDecodeResult extends EvaluationSplit {
    /** Set when the group's sampler rows could not be computed (NaN or +Infinity logits, an all-masked row). */
    readonly error?: string;
    /** Drawn rows whose ids were drawn on the host from copied logits (NativeOutputMode.Drawn). */
    readonly hostRows?: number;
}

/**
 * Where a NativeSequence's tokens live: a whole llama.cpp context of its own (OwnContextSlot), or one
 * sequence id of a context shared by many (BatchScheduler's slots, decoded together in steps).
 */
export interface SequenceSlot {
    /** Decodes `tokens` at positions start, start + 1, … and writes the rows `group` asks for. */
    decode(tokens: readonly number[], start: number, group: NativeOutputGroup): Promise<SlotDecodeResult>;
    /** Drops this sequence's positions from `from` on from the KV cache. */
    removeFrom(from: number): void;
    /** A copy of this sequence's KV cells in host memory (NativeContextHandle.saveSequence), once no decode of its context runs. */
    saveState(): Promise<Uint8Array>;
    /** Replaces this sequence's KV cells by a saveState copy, once no decode of its context runs. */
    restoreState(data: Uint8Array): Promise<void>;
    /** No decode will come until further notice (the sequence waits in a prompt cache): a shared step stops waiting for it. */
    idle(): void;
    /** Gives the slot back (its KV cells are dropped); called once, after the last decode settled. */
    release(): void;
    /** Sequence ids ("branches") a token tree on this slot may use, its own one (0) included; absent: 1. */
    readonly branches?: number;
    /**
     * Decodes tree nodes: token i on branch branches[i] at positions[i], and on the branches `shared`
     * (pairs of index and branch) adds. Slots with more than one branch have it.
     */
    decodeTree?(
        tokens: readonly number[],
        positions: Int32Array,
        branches: Int32Array,
        shared: Int32Array,
        group: NativeOutputGroup
    ): Promise<SlotDecodeResult>;
    /**
     * Branch `destination` also holds branch `source`'s cells at positions [from, to) (to = −1: to the
     * end), before any decode submitted after it (a shared context runs it between steps).
     */
    copyBranch?(source: number, destination: number, from: number, to: number): void | Promise<void>;
    /** Drops branch `branch`'s positions from `from` on. */
    removeBranch?(branch: number, from: number): void;
    /** The context and sequence id this slot decodes on (where an EAGLE-3 head reads the captured layers). */
    layerSource?(): LayerSource;
}

/** A context of its own (sequence id 0); small evaluations may run inline (InlineDecodeChooser). */
export class OwnContextSlot implements SequenceSlot {
    private readonly inline: InlineDecodeChooser;

    /**
     * @param branches the context's sequence ids (a unified KV cache when more than one), which a token
     *  tree's branches use
     */
    public constructor(
        private readonly context: NativeContextHandle,
        inlineBelowMilliseconds: number,
        private readonly onRelease: (context: NativeContextHandle) => void,
        public readonly branches = 1
    ) {
        this.inline = new InlineDecodeChooser(inlineBelowMilliseconds);
    }

    public decode(tokens: readonly number[], start: number, group: NativeOutputGroup): Promise<SlotDecodeResult> {
        const positions = Int32Array.from(tokens, (_token, index) => start + index);
        return this.decodeTree(tokens, positions, new Int32Array(tokens.length), new Int32Array(0), group);
    }

    public async decodeTree(
        tokens: readonly number[],
        positions: Int32Array,
        branches: Int32Array,
        shared: Int32Array,
        group: NativeOutputGroup
    ): Promise<SlotDecodeResult> {
        const batch = [Int32Array.from(tokens), branches, positions, [group], undefined, shared.length > 0 ? shared : undefined] as const;
        const result =
            (this.inline.inline(tokens.length) ? this.context.decodeNow(...batch) : null) ?? (await this.context.decode(...batch));
        this.inline.record(tokens.length, result.decodeMilliseconds + result.transferMilliseconds + result.samplingMilliseconds);
        return {
            decodeMilliseconds: result.decodeMilliseconds,
            transferMilliseconds: result.transferMilliseconds,
            samplingMilliseconds: result.samplingMilliseconds,
            deviceToHostBytes: result.groups[0]?.deviceToHostBytes ?? 0,
            hostRows: result.groups[0]?.hostRows ?? 0,
            error: result.groups[0]?.error
        };
    }

    public layerSource(): LayerSource {
        return {context: this.context, sequence: 0};
    }

    public removeFrom(from: number): void {
        if (from === 0) this.context.clear();
        else this.context.removeTokens(0, from, -1);
    }

    public copyBranch(source: number, destination: number, from: number, to: number): void {
        this.context.copyTokens(source, destination, from, to);
    }

    public removeBranch(branch: number, from: number): void {
        this.context.removeTokens(branch, from, -1);
    }

    // The sequence's OperationQueue runs these after its decode settled: nothing else decodes on this context.
    public saveState(): Promise<Uint8Array> {
        return new Promise((resolve) => resolve(this.context.saveSequence(0)));
    }

    public restoreState(data: Uint8Array): Promise<void> {
        return new Promise((resolve) => resolve(this.context.restoreSequence(0, data)));
    }

    /** Nothing waits for a sequence on a context of its own. */
    public idle(): void {}

    public release(): void {
        this.onRelease(this.context);
    }
}
