/** Counters of one drafter (a chain member counts on its own). */
export interface DrafterCounters {
    /** Steps on which the drafter was asked for a proposal. */
    lookups: number;
    /** Steps on which it proposed at least one token (and its proposal was verified). */
    proposals: number;
    draftTokens: number;
    acceptedTokens: number;
    draftedPerPosition: number[];
    acceptedPerPosition: number[];
}

/** Steps a drafter could not draft at all, and why (the first reason given). */
export interface DrafterUnavailable {
    steps: number;
    reason: string;
}

/** Per-drafter proposals, accepted tokens and per-position counts, keyed by member label. */
export class DrafterTelemetry {
    public readonly byDrafter = new Map<string, DrafterCounters>();
    /** Drafters that were off for some steps (an EAGLE-3 head without the target's rows for the history), keyed by label. */
    public readonly unavailable = new Map<string, DrafterUnavailable>();

    /** A step on which `label` could not draft, for `reason` (the first one stays). */
    public noteUnavailable(label: string, reason: string): void {
        const entry = this.unavailable.get(label);
        if (entry === undefined) this.unavailable.set(label, {steps: 1, reason});
        else entry.steps++;
    }

    /**
     * One step: the drafters consulted, and the proposal that was verified (source, size, accepted
     * prefix). `positions` is how deep it went: its size for a chain, the depth for a token tree
     * (whose per-position counts are then per depth).
     */
    public record(consulted: readonly string[], source: string, proposed: number, accepted: number, positions = proposed): void {
        for (const label of consulted) this.counters(label).lookups++;
        if (proposed === 0) return;
        const counters = this.counters(source);
        counters.proposals++;
        counters.draftTokens += proposed;
        counters.acceptedTokens += accepted;
        for (let position = 0; position < positions; position++) {
            counters.draftedPerPosition[position] = (counters.draftedPerPosition[position] ?? 0) + 1;
            counters.acceptedPerPosition[position] = (counters.acceptedPerPosition[position] ?? 0) + (position < accepted ? 1 : 0);
        }
    }

    public merge(other: DrafterTelemetry): void {
        for (const [label, {steps, reason}] of other.unavailable) {
            const entry = this.unavailable.get(label);
            if (entry === undefined) this.unavailable.set(label, {steps, reason});
            else entry.steps += steps;
        }
        for (const [label, counters] of other.byDrafter) {
            const mine = this.counters(label);
            mine.lookups += counters.lookups;
            mine.proposals += counters.proposals;
            mine.draftTokens += counters.draftTokens;
            mine.acceptedTokens += counters.acceptedTokens;
            counters.draftedPerPosition.forEach(
                (count, position) => (mine.draftedPerPosition[position] = (mine.draftedPerPosition[position] ?? 0) + count)
            );
            counters.acceptedPerPosition.forEach(
                (count, position) => (mine.acceptedPerPosition[position] = (mine.acceptedPerPosition[position] ?? 0) + count)
            );
        }
    }

    /** Each drafter's counters; `unavailable` only for a drafter that was off for some steps. */
    public toJSON(): Record<string, DrafterCounters & {acceptanceRate: number; unavailable?: DrafterUnavailable}> {
        return Object.fromEntries(
            [...this.byDrafter].map(([label, counters]) => {
                const unavailable = this.unavailable.get(label);
                return [
                    label,
                    {
                        ...counters,
                        draftedPerPosition: [...counters.draftedPerPosition],
                        acceptedPerPosition: [...counters.acceptedPerPosition],
                        acceptanceRate: counters.draftTokens === 0 ? 0 : counters.acceptedTokens / counters.draftTokens,
                        ...(unavailable === undefined ? {} : {unavailable: {...unavailable}})
                    }
                ];
            })
        );
    }

    private counters(label: string): DrafterCounters {
        let counters = this.byDrafter.get(label);
        if (counters == null) {
            counters = {lookups: 0, proposals: 0, draftTokens: 0, acceptedTokens: 0, draftedPerPosition: [], acceptedPerPosition: []};
            this.byDrafter.set(label, counters);
        }
        return counters;
    }
}
