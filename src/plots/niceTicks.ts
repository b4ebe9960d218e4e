/**
 * Round axis ticks covering [low, high]: steps of 1, 2 or 5 × 10^k, about `count` of them. The
 * returned range [first, last] contains the data, so plots scale to it.
 */
export function niceTicks(low: number, high: number, count = 5): number[] {
    if (!Number.isFinite(low) || !Number.isFinite(high)) return [0, 1];
    if (high - low < 1e-12) {
        const pad = Math.abs(low) > 0 ? Math.abs(low) * 0.1 : 1;
        low -= pad;
        high += pad;
    }
    const raw = (high - low) / count;
    const magnitude = 10 ** Math.floor(Math.log10(raw));
    const step = [1, 2, 5, 10].map((factor) => factor * magnitude).find((candidate) => candidate >= raw)!;
    const first = Math.floor(low / step) * step;
    const ticks: number[] = [];
    // Rounding to the step's decimals keeps labels like 0.30000000000000004 out of the plot.
    const decimals = Math.max(0, -Math.floor(Math.log10(step)));
    for (let value = first; value < high + step * 0.999; value += step) ticks.push(Number(value.toFixed(decimals)));
    return ticks;
}
