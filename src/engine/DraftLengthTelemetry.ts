/**
 * The draft length chosen for each decoding step of a speculative generation (before a drafter or
 * `minConfidence` proposes fewer), and how many steps `draftLength: "auto"` skipped speculation on
 * because it did not pay (a chosen length of 0, where a drafter could have drafted).
 */
export class DraftLengthTelemetry {
    /** Steps by chosen length: counts[k] steps chose k. */
    public counts: number[] = [];
    /** Steps on which "auto" chose no draft. */
    public skipped = 0;
    /** Steps "auto" ran at a length it did not choose: tries that time another length and keep acceptance measured. */
    public probes = 0;

    public record(length: number, skipped: boolean, probe: boolean): void {
        for (let index = this.counts.length; index <= length; index++) this.counts[index] = 0;
        this.counts[length]++;
        if (skipped) this.skipped++;
        if (probe) this.probes++;
    }

    public get steps(): number {
        return this.counts.reduce((sum, count) => sum + count, 0);
    }

    /** Mean chosen length; 0 without steps. */
    public get mean(): number {
        const steps = this.steps;
        return steps === 0 ? 0 : this.counts.reduce((sum, count, length) => sum + count * length, 0) / steps;
    }

    public merge(other: DraftLengthTelemetry): void {
        other.counts.forEach((count, length) => {
            for (let index = this.counts.length; index <= length; index++) this.counts[index] = 0;
            this.counts[length] += count;
        });
        this.skipped += other.skipped;
        this.probes += other.probes;
    }

    public toJSON() {
        return {counts: this.counts, skipped: this.skipped, probes: this.probes, mean: this.mean};
    }
}
