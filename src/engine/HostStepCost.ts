import {RecentMedian} from "./RecentMedian.js";

/**
 * What a step costs per live generation besides the target's compute and the drafting the chooser
 * charges (the draft length times the time of one draft position), learnt online for steps without
 * a draft and for steps with one: each generation's verification, streaming and bookkeeping on the
 * one event loop, the batch waiting for the slowest, and the extra target steps where sequences that
 * drafted miss a shared step (lockstep broken). It is measured as what a whole step cycle (one
 * generation's step end to its next) cost beyond those two, divided by the live generations, and
 * kept as the recent median of each kind (drafted steps of every length pooled: a length tried once,
 * right after a change of shape, does not stand for itself on one dear sample).
 *
 * A kind not sampled for staleAfter steps is measured afresh by its next sample (its old samples are
 * dropped), so a cost measured under other load cannot stand for good. Steps without a draft, before
 * any sample of theirs, are read as drafted ones.
 */
export class HostStepCost {
    private readonly kinds: [Kind | undefined, Kind | undefined] = [undefined, undefined];
    private clock = 0;

    /** A step cycle of draft length `length` cost `milliseconds` per live generation beyond the target and the charged drafting. */
    public record(length: number, milliseconds: number): void {
        if (!(length >= 0) || !Number.isFinite(milliseconds)) return;
        this.clock++;
        const index = length > 0 ? 1 : 0;
        let kind = this.kinds[index];
        if (kind === undefined || this.clock - kind.stamp > staleAfter) this.kinds[index] = kind = {median: new RecentMedian(), stamp: 0};
        kind.stamp = this.clock;
        kind.median.add(Math.max(0, milliseconds));
    }

    /** Whether steps of `length` (without a draft, or with one) were sampled in the last staleAfter steps. */
    public fresh(length: number): boolean {
        const kind = this.kinds[length > 0 ? 1 : 0];
        return kind !== undefined && this.clock - kind.stamp <= staleAfter;
    }

    /**
     * Milliseconds per live generation at `length`; 0 before any sample. A drafted step is never
     * predicted cheaper than one without a draft: it does all that one does and more, and where it
     * is measured cheaper, the others' work went into the drafting's measured time (a batched draft
     * call waits for every generation's submission) or the sample mixed short probes with long drafts.
     */
    public predict(length: number): number {
        const without = this.kinds[0]?.median.value;
        const drafted = this.kinds[1]?.median.value;
        if (length === 0) return without ?? drafted ?? 0;
        return Math.max(drafted ?? 0, without ?? 0);
    }
}

interface Kind {
    readonly median: RecentMedian;
    stamp: number;
}

/** Steps (samples recorded) after which a cost's samples are stale and its next sample replaces them. */
export const staleAfter = 64;
