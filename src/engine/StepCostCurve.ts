import {RecentMedian} from "./RecentMedian.js";

/**
 * The measured cost t(n) of a target step decoding n tokens (every sequence's tokens of a shared
 * step together), learnt online: the median of the last samples of each n (RecentMedian: a call
 * slowed by another process does not move it, a lasting change of load does), read through a local
 * straight-line fit (predict).
 */
export class StepCostCurve {
    private readonly points = new Map<number, RecentMedian>();
    /** Sizes measured only on steps whose shape differed from the step before: the least such sample of each. */
    private readonly provisional = new Map<number, number>();
    /** What a step right after a change of shape cost beyond a steady step of its size. */
    private readonly rebuild = new RecentMedian();
    /** samples()' result until the next measurement: predict() is asked for many sizes between two steps. */
    private sampled: Array<{size: number; value: number; count: number}> | undefined;

    public record(tokens: number, milliseconds: number): void {
        if (!(tokens >= 1) || !Number.isFinite(milliseconds) || milliseconds < 0) return;
        this.sampled = undefined;
        const provisional = this.provisional.get(tokens);
        if (provisional !== undefined) this.rebuild.add(provisional - milliseconds);
        this.provisional.delete(tokens);
        let point = this.points.get(tokens);
        if (point === undefined) {
            point = new RecentMedian();
            this.points.set(tokens, point);
        }
        point.add(milliseconds);
    }

    /**
     * A sample of a step whose size (or shape) differed from the step before: llama.cpp rebuilt its
     * compute graph for it, a cost of the change and not of the size. Beside a size's steady samples
     * it measures the rebuild (the median excess of such samples over the steady cost of their size);
     * a size without steady samples is stood for by the least of its samples less that rebuild,
     * weighing provisionalWeight samples in the fit, until a steady sample arrives. So a length that
     * has only been tried right after a change does not keep looking as dear as its first step was;
     * and one below its size's steady median counts as a steady sample too (a rebuild only adds), so a
     * size measured under heavier load is corrected by the probes and changes that visit it later.
     */
    public recordAfterChange(tokens: number, milliseconds: number): void {
        if (!(tokens >= 1) || !Number.isFinite(milliseconds) || milliseconds < 0) return;
        this.sampled = undefined;
        const steady = this.points.get(tokens);
        // A rebuild only adds: a step after a change that costs less than the size's steady median shows
        // that median too high (measured under heavier load, or long ago), so it counts as a steady sample.
        if (steady !== undefined) {
            const excess = milliseconds - steady.value!;
            this.rebuild.add(excess);
            if (excess < 0) steady.add(milliseconds);
        } else this.provisional.set(tokens, Math.min(milliseconds, this.provisional.get(tokens) ?? Infinity));
    }

    /** Milliseconds a change of shape adds to a step (the median measured; 0 before any, never below 0). */
    public get rebuildMilliseconds(): number {
        return Math.max(0, this.rebuild.value ?? 0);
    }

    /** Sizes measured so far. */
    public get sizes(): number {
        return this.points.size + this.provisional.size;
    }

    public has(tokens: number): boolean {
        return this.points.has(tokens) || this.provisional.has(tokens);
    }

    /** Sizes with at least `samples` steady samples (taken on a step of the same shape as the one before). */
    public settledSizes(samples: number): number {
        let settled = 0;
        for (const point of this.points.values()) if (point.count >= samples) settled++;
        return settled;
    }

    /** Whether `tokens` has at least `samples` steady samples. */
    public settled(tokens: number, samples: number): boolean {
        return (this.points.get(tokens)?.count ?? 0) >= samples;
    }

    /**
     * Predicted milliseconds of a step of `tokens` tokens; NaN before any measurement. A size with
     * ownSamples steady samples or more: their median. Any other: a straight line
     * fitted by weighted least squares to the measured sizes, each weighted by its samples (at most
     * settledWeight) and by its nearness to `tokens` on a log scale (a size twice as far off counts
     * 0.73 as much): a single noisy size cannot bend the prediction, and a curve that is flat at first
     * and then rises (a GPU turning compute-bound) is followed locally. Its slope is never negative:
     * more tokens never cost less.
     */
    public predict(tokens: number): number {
        // A size measured on enough steady steps is its own best estimate: where the cost is not a
        // straight line, the fit would bend it towards its neighbours (the smallest size asked, a step
        // without drafts, towards the dearer drafted sizes above it).
        const point = this.points.get(tokens);
        if (point !== undefined && point.count >= ownSamples) return point.value!;
        const samples = this.samples();
        if (samples.length === 0) return Number.NaN;
        let weight = 0;
        let sumX = 0;
        let sumY = 0;
        for (const sample of samples) {
            const w = this.weight(sample.size, sample.count, tokens);
            weight += w;
            sumX += w * sample.size;
            sumY += w * sample.value;
        }
        const meanX = sumX / weight;
        const meanY = sumY / weight;
        let covariance = 0;
        let variance = 0;
        for (const sample of samples) {
            const w = this.weight(sample.size, sample.count, tokens);
            covariance += w * (sample.size - meanX) * (sample.value - meanY);
            variance += w * (sample.size - meanX) ** 2;
        }
        const slope = variance > 0 ? Math.max(0, covariance / variance) : 0;
        return Math.max(0, meanY + slope * (tokens - meanX));
    }

    /** Every measured size with its value and the samples it counts as. */
    private samples(): Array<{size: number; value: number; count: number}> {
        if (this.sampled !== undefined) return this.sampled;
        const samples = [...this.points].map(([size, point]) => ({size, value: point.value!, count: point.count}));
        const rebuild = this.rebuildMilliseconds;
        for (const [size, value] of this.provisional) samples.push({size, value: Math.max(0, value - rebuild), count: provisionalWeight});
        this.sampled = samples;
        return samples;
    }

    private weight(size: number, count: number, tokens: number): number {
        const distance = Math.log(size / tokens) / logBandwidth;
        // A small floor keeps far sizes in the fit, so it can extrapolate beyond the measured range.
        return Math.min(count, settledWeight) * (Math.exp(-0.5 * distance * distance) + 0.01);
    }
}

/** A size this many e-folds away on a log scale weighs e^(−1/2) as much: ln 2 · 1.25, so twice as far off weighs 0.73. */
const logBandwidth = Math.log(2) * 1.25;
/** What a size measured only after a change of shape counts as in the fit, in samples. */
const provisionalWeight = 0.25;
/** Steady samples of a size after which its median is its prediction, without the fit. */
const ownSamples = 3;
/** Samples beyond which a size weighs no more in the fit. */
const settledWeight = 8;
