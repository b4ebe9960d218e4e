import type {EvaluationSplit} from "./ModelBackend.js";
import type {NativeContextHandle, NativeOutputGroup} from "./nativeAddon.js";

/** What decoding one evaluation cost, its row error if any, and how long it waited for a shared batch. */
export interface SlotDecodeResult extends EvaluationSplit {
    /** Set when the group's sampler rows could not be computed (NaN or +Infinity logits, an all-masked row). */
    readonly error?: string;
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
    /** Gives the slot back (its KV cells are dropped); called once, after the last decode settled. */
    release(): void;
}

/** Largest batch that may run inline (a draft step or a γ ≤ 7 verification). */
const inlineBatchLimit = 8;

/**
 * A context of its own (sequence id 0). Small evaluations whose recent native cost is below
 * `inlineBelowMilliseconds` run on the main thread (see NativeBackendOptions.inlineBelowMilliseconds).
 */
export class OwnContextSlot implements SequenceSlot {
    /** Moving average of the native cost of small evaluations; starts high so the first ones go to a worker. */
    private smallCallMilliseconds = Infinity;

    public constructor(
        private readonly context: NativeContextHandle,
        private readonly inlineBelowMilliseconds: number,
        private readonly onRelease: (context: NativeContextHandle) => void
    ) {}

    public async decode(tokens: readonly number[], start: number, group: NativeOutputGroup): Promise<SlotDecodeResult> {
        const batch = [Int32Array.from(tokens), new Int32Array(tokens.length), Int32Array.from(tokens, (_token, index) => start + index), [group]] as const;
        const small = tokens.length <= inlineBatchLimit;
        const inline = small && this.smallCallMilliseconds < this.inlineBelowMilliseconds;
        const result = (inline ? this.context.decodeNow(...batch) : null) ?? await this.context.decode(...batch);
        if (small) {
            const cost = result.decodeMilliseconds + result.transferMilliseconds;
            this.smallCallMilliseconds = this.smallCallMilliseconds === Infinity ? cost : 0.8 * this.smallCallMilliseconds + 0.2 * cost;
        }
        return {
            decodeMilliseconds: result.decodeMilliseconds, transferMilliseconds: result.transferMilliseconds,
            samplingMilliseconds: result.samplingMilliseconds, error: result.groups[0]?.error
        };
    }

    public removeFrom(from: number): void {
        if (from === 0) this.context.clear();
        else this.context.removeTokens(0, from, -1);
    }

    public release(): void {
        this.onRelease(this.context);
    }
}
