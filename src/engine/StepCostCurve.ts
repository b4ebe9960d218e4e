/**
 * The measured cost t(n) of a target step decoding n tokens (every sequence's tokens of a shared
 * step together), learnt online: a running mean per n (the first few samples averaged, later ones
 * weighted 1/8 so the curve follows load from other processes), read between measured sizes by
 * linear interpolation and beyond them along the least-squares slope of all sizes (never negative:
 * more tokens never cost less).
 */
export class StepCostCurve {
    private readonly points = new Map<number, {mean: number; count: number}>();
    private sorted: number[] | undefined;

    public record(tokens: number, milliseconds: number): void {
        if (!(tokens >= 1) || !Number.isFinite(milliseconds) || milliseconds < 0) return;
        const point = this.points.get(tokens);
        if (point === undefined) {
            this.points.set(tokens, {mean: milliseconds, count: 1});
            this.sorted = undefined;
            return;
        }
        point.count++;
        point.mean += (milliseconds - point.mean) / Math.min(point.count, settledWeight);
    }

    /** Sizes measured so far. */
    public get sizes(): number {
        return this.points.size;
    }

    public has(tokens: number): boolean {
        return this.points.has(tokens);
    }

    /** Predicted milliseconds of a step of `tokens` tokens; NaN before any measurement. */
    public predict(tokens: number): number {
        const sizes = this.sortedSizes();
        if (sizes.length === 0) return Number.NaN;
        const at = (size: number) => this.points.get(size)!.mean;
        if (sizes.length === 1) return at(sizes[0]);
        const first = sizes[0];
        const last = sizes[sizes.length - 1];
        if (tokens <= first) return Math.max(0, at(first) - this.slope() * (first - tokens));
        if (tokens >= last) return at(last) + this.slope() * (tokens - last);
        let upper = 1;
        while (sizes[upper] < tokens) upper++;
        const low = sizes[upper - 1];
        const high = sizes[upper];
        return at(low) + ((at(high) - at(low)) * (tokens - low)) / (high - low);
    }

    /** Least-squares slope over the measured sizes, each weighted by its samples (at most settledWeight), at least 0. */
    private slope(): number {
        let weight = 0;
        let meanX = 0;
        let meanY = 0;
        for (const [size, point] of this.points) {
            const w = Math.min(point.count, settledWeight);
            weight += w;
            meanX += w * size;
            meanY += w * point.mean;
        }
        meanX /= weight;
        meanY /= weight;
        let covariance = 0;
        let variance = 0;
        for (const [size, point] of this.points) {
            const w = Math.min(point.count, settledWeight);
            covariance += w * (size - meanX) * (point.mean - meanY);
            variance += w * (size - meanX) ** 2;
        }
        return variance === 0 ? 0 : Math.max(0, covariance / variance);
    }

    private sortedSizes(): number[] {
        this.sorted ??= [...this.points.keys()].sort((a, b) => a - b);
        return this.sorted;
    }
}

/** Samples after which a size's mean becomes a running average weighting each new one 1/8. */
const settledWeight = 8;
