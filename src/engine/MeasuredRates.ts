/**
 * What the generations on one load actually deliver at each draft length, beside what the cost
 * model predicted for it: the tokens every generation emitted per millisecond of wall time between
 * two shared steps, at each length and load (live generations, in powers of two), divided by the
 * rate chooseDraftLength predicted for those steps. The ratio corrects the model for what it leaves
 * out — the server's own work per stream and step, a draft that holds a batched step back, a graph
 * rebuilt after a change of shape — so draftLength auto ranks lengths by what they were measured to
 * do, and by the model only where a length has not been measured at the current load. The choice
 * depends on past steps only, so it leaves every lossless policy lossless.
 *
 * It also says when to try a length other than the one chosen (explore): a few steps at a time, at
 * intervals that double while the tries confirm the choice, for lengths not measured yet and those
 * whose corrected rate is within reach of the chosen one's, so a length measured clearly slower is
 * not paid for again until the estimates move or maxExploreInterval steps have passed.
 */
export class MeasuredRates {
    private readonly loads = new Map<string, LoadRates>();
    private open: OpenStep | undefined;
    private previous: {key: string; length: number} | undefined;

    /** `measure`: false keeps every correction at 1 and tries no other length (tests whose costs are preset); `clock` in milliseconds. */
    public constructor(
        private readonly measure = true,
        private readonly clock: () => number = () => performance.now()
    ) {}

    /** The correction key for `live` generations drafting `tokensPerPosition` target tokens per position. */
    public static key(live: number, tokensPerPosition: number): string {
        return `${live <= 2 ? live : 2 ** Math.ceil(Math.log2(live))}/${tokensPerPosition}`;
    }

    /**
     * A shared step starts at `length`, for which the model predicted `predicted` tokens per
     * millisecond: the step before it ends here. Only a step of the same length and load as the one
     * before it is measured (the first after a change pays a graph rebuild and a drafter's catch-up,
     * costs of the change that the model charges on its own).
     */
    public begin(key: string, length: number, predicted: number): void {
        const now = this.clock();
        this.close(now);
        const steady = this.previous?.key === key && this.previous.length === length;
        this.open = {key, length, predicted, start: now, tokens: 0, steady};
        this.previous = {key, length};
        const rates = this.ratesFor(key);
        rates.steps++;
        if (rates.exploring !== undefined && --rates.exploring.remaining <= 0) rates.exploring = undefined;
    }

    /** Tokens emitted by one generation's step (every generation reports its own). */
    public emitted(tokens: number): void {
        if (this.open !== undefined) this.open.tokens += tokens;
    }

    /** A generation joined or left: the step under way is not one of a steady load. */
    public disturb(): void {
        if (this.open !== undefined) this.open.steady = false;
        this.previous = undefined;
    }

    /**
     * The factor to multiply the model's predicted rate of `length` by at `key`: measured ÷ predicted
     * where the length has minSamples steady steps at that load; otherwise the factor of the measured
     * length nearest it (between two, interpolated), so an unmeasured length is assumed to be as far
     * off as its neighbours; 1 where none is measured.
     */
    public factor(key: string, length: number): number {
        const lengths = this.loads.get(key)?.lengths;
        if (lengths === undefined) return 1;
        let below: {length: number; factor: number} | undefined;
        let above: {length: number; factor: number} | undefined;
        for (const [measured, sums] of lengths) {
            if (sums.count < minSamples) continue;
            const factor = sums.tokens / sums.milliseconds / (sums.predicted / sums.weight);
            if (measured === length) return factor;
            if (measured < length && (below === undefined || measured > below.length)) below = {length: measured, factor};
            if (measured > length && (above === undefined || measured < above.length)) above = {length: measured, factor};
        }
        if (below === undefined || above === undefined) return below?.factor ?? above?.factor ?? 1;
        const share = (length - below.length) / (above.length - below.length);
        return below.factor + share * (above.factor - below.factor);
    }

    /** Whether `length` has minSamples steady steps at `key`. */
    public measured(key: string, length: number): boolean {
        return (this.loads.get(key)?.lengths.get(length)?.count ?? 0) >= minSamples;
    }

    /**
     * The length to run the next step at instead of `chosen`, when a try is due: one of `candidates`
     * not measured at this load yet, or whose corrected rate (`rate`) is at least exploreWithin of the
     * chosen one's (any of them after maxExploreInterval steps), the one measured longest ago first;
     * it runs for exploreSteps steps.
     * Undefined: run `chosen`. Turning drafting on or off starts the intervals again.
     */
    public explore(key: string, chosen: number, candidates: readonly number[], rate: (length: number) => number): number | undefined {
        // Without measurements a try would tell nothing.
        if (!this.measure) return undefined;
        const rates = this.ratesFor(key);
        if (rates.exploring !== undefined) return rates.exploring.length;
        if (rates.drafting !== chosen > 0) {
            rates.drafting = chosen > 0;
            rates.interval = baseExploreInterval;
            rates.lastExplored = rates.steps;
        }
        const since = rates.steps - rates.lastExplored;
        if (since < rates.interval) return undefined;
        const reach = since >= maxExploreInterval ? 0 : exploreWithin * rate(chosen);
        let pick: {length: number; at: number} | undefined;
        for (const length of candidates) {
            // An unmeasured length's rate rests on its neighbours' correction, which need not hold for
            // it (drafting costs what not drafting does not): it is tried once whatever its rate.
            if (length === chosen || (this.measured(key, length) && !(rate(length) >= reach))) continue;
            const at = rates.lengths.get(length)?.at ?? -Infinity;
            if (pick === undefined || at < pick.at) pick = {length, at};
        }
        if (pick === undefined) return undefined;
        rates.lastExplored = rates.steps;
        rates.interval = Math.min(maxExploreInterval, 2 * rates.interval);
        rates.exploring = {length: pick.length, remaining: exploreSteps};
        return pick.length;
    }

    private close(now: number): void {
        const step = this.open;
        this.open = undefined;
        if (!this.measure || step === undefined || !step.steady || !(step.predicted > 0) || !Number.isFinite(step.predicted)) return;
        const milliseconds = now - step.start;
        if (!(milliseconds > 0) || step.tokens <= 0) return;
        const rates = this.ratesFor(step.key);
        let sums = rates.lengths.get(step.length);
        if (sums === undefined) rates.lengths.set(step.length, (sums = {tokens: 0, milliseconds: 0, predicted: 0, weight: 0, count: 0, at: 0}));
        // A step far slower than its length's usual was held up by something else (another process, an idle client).
        if (sums.count >= minSamples && milliseconds > outlierFactor * (sums.milliseconds / sums.weight)) return;
        sums.tokens = sums.tokens * decay + step.tokens;
        sums.milliseconds = sums.milliseconds * decay + milliseconds;
        sums.predicted = sums.predicted * decay + step.predicted;
        sums.weight = sums.weight * decay + 1;
        sums.count++;
        sums.at = rates.steps;
    }

    private ratesFor(key: string): LoadRates {
        let rates = this.loads.get(key);
        if (rates === undefined) {
            if (this.loads.size >= maxKeys) this.loads.delete(this.loads.keys().next().value!);
            this.loads.set(key, (rates = {lengths: new Map(), steps: 0, lastExplored: 0, interval: baseExploreInterval, drafting: undefined}));
        }
        return rates;
    }
}

interface OpenStep {
    readonly key: string;
    readonly length: number;
    readonly predicted: number;
    readonly start: number;
    tokens: number;
    steady: boolean;
}

/** Decayed sums of a length's steady steps at one load: emitted tokens, wall milliseconds, predicted rates, and their count. */
interface LengthSums {
    tokens: number;
    milliseconds: number;
    predicted: number;
    weight: number;
    /** Steps counted, without decay. */
    count: number;
    /** The load's step count at the last sample. */
    at: number;
}

interface LoadRates {
    readonly lengths: Map<number, LengthSums>;
    /** Shared steps begun at this load. */
    steps: number;
    lastExplored: number;
    interval: number;
    /** Whether the chosen length drafted, at the last explore(). */
    drafting: boolean | undefined;
    exploring?: {readonly length: number; remaining: number};
}

/** Steady steps of a length before its measured rate corrects the model's. */
const minSamples = 3;
/** Each new sample weighs earlier ones by this (memory ≈ 32 steps), so a change of content or load is followed. */
const decay = 1 - 1 / 32;
/** A step this many times slower than its length's mean is not counted. */
const outlierFactor = 8;
/** Steps a try of another length runs (the first, after the change, is not measured). */
const exploreSteps = 4;
/** Steps between tries, doubling after each up to maxExploreInterval. */
const baseExploreInterval = 32;
const maxExploreInterval = 512;
/** A length is tried when its corrected rate is at least this share of the chosen length's. */
const exploreWithin = 0.85;
/** Loads remembered (live generations by powers of two, times tokens per position). */
const maxKeys = 64;
