import type {
    NativeEagle3DrawOptions,
    NativeEagle3GroupDraft,
    NativeEagle3GroupDraw,
    NativeEagle3HeadGroupHandle,
    NativeEagle3HeadHandle
} from "./Eagle3HeadHandle.js";
import type {NativeDecodeResult} from "./nativeAddon.js";

/** Requests of shared head calls, the calls, and the largest, for telemetry and tests. */
export interface Eagle3HeadBatchStats {
    /** Shared draft calls made (each one catch-up and one decode per draft iteration for all its slots). */
    calls: number;
    /** Slots' drafts in them: sequences / calls is the mean batch. */
    sequences: number;
    /** The most slots one call drafted for. */
    largest: number;
    /** Draft tokens the calls were asked for (γ per slot). */
    tokens: number;
    /** Milliseconds with a draft pending and no call running (the turn that collects the others). */
    gatherMilliseconds: number;
    /** Milliseconds inside the calls' native work (catch-ups and draft iterations). */
    decodeMilliseconds: number;
}

interface Pending {
    readonly request: NativeEagle3GroupDraft | NativeEagle3GroupDraw;
    readonly resolve: (result: NativeDecodeResult) => void;
    readonly reject: (error: unknown) => void;
}

/**
 * The drafts of an EAGLE-3 head group's slots, collected then run together (as BatchScheduler
 * collects a shared target context's submissions): the drafts asked for in one turn of the event loop
 * (every stream of a target step verifies, then asks for its next draft) go in one native call, and
 * those that arrive while it runs go in the next, right after it. Each slot's handle (openHead) is a
 * NativeEagle3HeadHandle, so a drafter cannot tell a slot from a head of its own.
 */
export class Eagle3HeadBatcher {
    public readonly stats: Eagle3HeadBatchStats = {
        calls: 0,
        sequences: 0,
        largest: 0,
        tokens: 0,
        gatherMilliseconds: 0,
        decodeMilliseconds: 0
    };
    private pending: Pending[] = [];
    private running = false;
    private scheduled: NodeJS.Immediate | undefined;
    private disposed = false;
    /** When the oldest pending draft arrived while no call ran. */
    private gatherSince: number | undefined;
    /** The slot each target sequence's latest head drafts on (an object per head, so a later head on the same slot is told apart). */
    private readonly slotOf = new Map<number, {readonly slot: number}>();

    public constructor(private readonly group: NativeEagle3HeadGroupHandle) {}

    /**
     * A handle drafting on a slot for `targetSequence`. The sequence's earlier head, if any, has drafted
     * its last (its target slot was released first): its slot is freed now, so a group of as many
     * slots as the target never runs out, and a call of it still queued runs before the new head's
     * first (a call takes one request per slot) and drafts nothing for a history that is not the target's.
     */
    public openHead(targetSequence: number): NativeEagle3HeadHandle {
        const earlier = this.slotOf.get(targetSequence);
        if (earlier !== undefined) this.group.close(earlier.slot);
        const slot = this.group.open(targetSequence);
        const owner = {slot};
        this.slotOf.set(targetSequence, owner);
        let inFlight: Promise<unknown> = Promise.resolve();
        let closed = false;
        // A slot is freed once its calls have settled, so its next request never shares it with one still running.
        const track = <T>(call: Promise<T>): Promise<T> => {
            inFlight = Promise.allSettled([inFlight, call]);
            return call;
        };
        const draw = (
            history: Int32Array,
            uniforms: Float64Array,
            options: NativeEagle3DrawOptions,
            ids: Int32Array,
            probabilities: Float64Array,
            logits: Float64Array
        ) => track(this.submit({slot, history, uniforms, options, ids, probabilities, logits}));
        return {
            vocabularySize: this.group.vocabularySize,
            draft: (history, count, destination) => track(this.submit({slot, history, count, destination})),
            next: (token, destination) => track(this.group.next(slot, token, destination)),
            draftNow: () => null,
            nextNow: () => null,
            drawDrafts: draw,
            drawDraftsNow: () => null,
            drawnAt: (row, ids, destination) => this.group.drawnAt(slot, row, ids, destination),
            dispose: () => {
                if (closed) return;
                closed = true;
                void inFlight.then(() => {
                    if (this.disposed || this.slotOf.get(targetSequence) !== owner) return;
                    this.slotOf.delete(targetSequence);
                    this.group.close(slot);
                });
            }
        };
    }

    /** Frees the group once its call in flight settles; drafts not yet run are refused. */
    public dispose(): void {
        if (this.disposed) return;
        this.disposed = true;
        clearImmediate(this.scheduled);
        for (const waiting of this.pending.splice(0)) waiting.reject(new Error("the head is disposed"));
        this.group.dispose();
    }

    private submit(request: NativeEagle3GroupDraft | NativeEagle3GroupDraw): Promise<NativeDecodeResult> {
        if (this.disposed) return Promise.reject(new Error("the head is disposed"));
        return new Promise((resolve, reject) => {
            this.pending.push({request, resolve, reject});
            if (!this.running) this.gatherSince ??= performance.now();
            this.schedule();
        });
    }

    /** Runs the pending drafts after the current turn (so the drafts of one target step join), unless a call is running. */
    private schedule(): void {
        if (this.running || this.scheduled !== undefined || this.pending.length === 0) return;
        this.scheduled = setImmediate(() => {
            this.scheduled = undefined;
            void this.run();
        });
    }

    private async run(): Promise<void> {
        if (this.running || this.disposed || this.pending.length === 0) return;
        // One request per slot: a later one (a new head's first, behind its slot's previous head's last) waits for the next call.
        const slots = new Set<number>();
        const batch = this.pending.filter((waiting) => !slots.has(waiting.request.slot) && slots.add(waiting.request.slot) !== undefined);
        this.pending = this.pending.filter((waiting) => !batch.includes(waiting));
        this.running = true;
        this.stats.calls++;
        this.stats.sequences += batch.length;
        this.stats.largest = Math.max(this.stats.largest, batch.length);
        for (const {request} of batch) this.stats.tokens += "uniforms" in request ? request.uniforms.length : request.count;
        if (this.gatherSince !== undefined) this.stats.gatherMilliseconds += performance.now() - this.gatherSince;
        this.gatherSince = undefined;
        try {
            await this.draftTogether(batch);
        } finally {
            this.running = false;
            if (this.pending.length > 0) this.gatherSince = performance.now();
            this.schedule();
        }
    }
    /** One call for the batch; a request the addon refuses (its arguments) is refused alone, the others then run without it. */
    private async draftTogether(batch: readonly Pending[]): Promise<void> {
        let call: Promise<NativeDecodeResult>;
        try {
            call = this.group.draft(batch.map((waiting) => waiting.request));
        } catch (error) {
            if (batch.length === 1) return batch[0].reject(error);
            for (const waiting of batch) await this.draftTogether([waiting]);
            return;
        }
        try {
            const result = await call;
            this.stats.decodeMilliseconds += result.decodeMilliseconds;
            for (const [index, waiting] of batch.entries()) waiting.resolve({...result, groups: [result.groups[index]]});
        } catch (error) {
            for (const waiting of batch) waiting.reject(error);
        }
    }
}
