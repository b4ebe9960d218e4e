import {RecentMedian} from "./RecentMedian.js";

/**
 * The measured cost t(n) of a target step decoding n tokens (every sequence's tokens of a shared
 * step together), learnt online: the median of the last samples of each n (RecentMedian: a call
 * slowed by another process does not move it, a lasting change of load does), read through a local
 * straight-line fit (predict).
 */
export class StepCostCurve {
    private readonly points = new Map<number, RecentMedian>();

    public record(tokens: number, milliseconds: number): void {
        if (!(tokens >= 1) || !Number.isFinite(milliseconds) || milliseconds < 0) return;
        let point = this.points.get(tokens);
        if (point === undefined) {
            point = new RecentMedian();
            this.points.set(tokens, point);
        }
        point.add(milliseconds);
    }

    /** Sizes measured so far. */
    public get sizes(): number {
        return this.points.size;
    }

    public has(tokens: number): boolean {
        return this.points.has(tokens);
    }

    /**
     * Predicted milliseconds of a step of `tokens` tokens; NaN before any measurement. A straight line
     * fitted by weighted least squares to the measured sizes, each weighted by its samples (at most
     * settledWeight) and by its nearness to `tokens` on a log scale (a size twice as far off counts
     * 0.73 as much): a single noisy size cannot bend the prediction, and a curve that is flat at first
     * and then rises (a GPU turning compute-bound) is followed locally. Its slope is never negative:
     * more tokens never cost less.
     */
    public predict(tokens: number): number {
        if (this.points.size === 0) return Number.NaN;
        let weight = 0;
        let sumX = 0;
        let sumY = 0;
        for (const [size, point] of this.points) {
            const w = this.weight(size, point.count, tokens);
            weight += w;
            sumX += w * size;
            sumY += w * point.value!;
        }
        const meanX = sumX / weight;
        const meanY = sumY / weight;
        let covariance = 0;
        let variance = 0;
        for (const [size, point] of this.points) {
            const w = this.weight(size, point.count, tokens);
            covariance += w * (size - meanX) * (point.value! - meanY);
            variance += w * (size - meanX) ** 2;
        }
        const slope = variance > 0 ? Math.max(0, covariance / variance) : 0;
        return Math.max(0, meanY + slope * (tokens - meanX));
    }

    private weight(size: number, count: number, tokens: number): number {
        const distance = Math.log(size / tokens) / logBandwidth;
        // A small floor keeps far sizes in the fit, so it can extrapolate beyond the measured range.
        return Math.min(count, settledWeight) * (Math.exp(-0.5 * distance * distance) + 0.01);
    }
}

/** A size this many e-folds away on a log scale weighs e^(−1/2) as much: ln 2 · 1.25, so twice as far off weighs 0.73. */
const logBandwidth = Math.log(2) * 1.25;
/** Samples beyond which a size weighs no more in the fit. */
const settledWeight = 8;
