/**
 * The median of the last `capacity` samples: a timing statistic that one descheduled call (a busy
 * machine's 100 ms for a 1 ms decode) does not move, and that follows a lasting change within
 * capacity / 2 samples.
 */
export class RecentMedian {
    private readonly samples: number[] = [];
    private next = 0;
    private cached: number | undefined;

    public constructor(private readonly capacity = 15) {}

    public add(value: number): void {
        if (!Number.isFinite(value)) return;
        if (this.samples.length < this.capacity) this.samples.push(value);
        else this.samples[this.next] = value;
        this.next = (this.next + 1) % this.capacity;
        this.cached = undefined;
    }

    public get count(): number {
        return this.samples.length;
    }

    /** The median; undefined before any sample. */
    public get value(): number | undefined {
        if (this.samples.length === 0) return undefined;
        if (this.cached === undefined) {
            const sorted = [...this.samples].sort((a, b) => a - b);
            const middle = sorted.length >> 1;
            this.cached = sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
        }
        return this.cached;
    }
}
