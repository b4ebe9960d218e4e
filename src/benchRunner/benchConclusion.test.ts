import {describe, expect, it} from "vitest";

import {medianInterval} from "../statistics/medianInterval.js";
import {type BenchRow, benchConclusion, formatBenchTable} from "./runBench.js";

/** A row whose per-round speed-ups are `rounds`. */
function row(label: string, rounds: readonly number[], exactMatchRate = 1): BenchRow {
    const sorted = [...rounds].sort((a, b) => a - b);
    const speedup = sorted.length % 2 === 1 ? sorted[sorted.length >> 1] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
    return {
        label,
        speedup,
        speedupRange: {min: sorted[0], max: sorted.at(-1)},
        speedupInterval: medianInterval(rounds),
        exactMatchRate,
        tokensPerSecond: 10
    } as BenchRow;
}
const baseline = row("target-only", [1, 1, 1, 1, 1, 1]);

describe("the line that ends the bench table", () => {
    it("calls the fastest exact row faster only when its 95% interval of the median lies above 1×", () => {
        const six = [1.3, 1.35, 1.4, 1.4, 1.45, 1.5];
        expect(benchConclusion([baseline, row("model strict γ=4", six), row("model greedy γ=1", [0.9, 1, 1.1, 1.1, 1.2, 1.2])], 6)).toBe(
            "conclusion: model strict γ=4 is the fastest exact configuration, 1.40× [1.30, 1.50] (96.9% interval of the median): faster than target-only"
        );
        expect(benchConclusion([baseline, row("model strict γ=4", [0.95, 1.0, 1.05, 1.08, 1.1, 1.1])], 6)).toBe(
            "conclusion: model strict γ=4 is the fastest exact configuration at 1.06×, but its interval [0.95, 1.10] (96.9% interval of the median) contains 1×: no reliable gain"
        );
    });

    it("does not call three rounds all above 1× faster: a sign test at p = 0.25", () => {
        expect(benchConclusion([baseline, row("model strict γ=4", [1.3, 1.4, 1.5])], 3)).toBe(
            "conclusion: model strict γ=4 is the fastest exact configuration, 1.40× [1.30, 1.50] (75.0% interval of the median): " +
                "faster in all 3 rounds, but that is a sign test at p = 0.250: too few rounds to call it faster (run --repeats 6 or more)"
        );
    });

    it("says when nothing exact beats target-only, names a faster lossy row's price, and distrusts one round", () => {
        const slower = [0.75, 0.8, 0.83, 0.85, 0.88, 0.9];
        expect(benchConclusion([baseline, row("model strict γ=4", slower), row("model fuzzy:js:0.4 γ=4", [0.9, 0.9, 0.9], 0.75)], 6)).toBe(
            "conclusion: model strict γ=4 is the fastest exact configuration, 0.84× [0.75, 0.90] (96.9% interval of the median): slower than target-only; " +
                "here the models' per-call cost outweighs what acceptance saves; the analytic limit is what carries over to a compute-bound target; " +
                "model fuzzy:js:0.4 γ=4 is faster (0.90×) but changed the output on 25% of prompts"
        );
        expect(benchConclusion([baseline, row("model strict γ=4", [1.4])], 1)).toMatch(
            /one round has no interval, so it cannot be called faster/
        );
    });

    it("prints the interval in the table and says how confident it is", () => {
        const table = formatBenchTable([baseline, row("model strict γ=4", [1.3, 1.4, 1.5])], 3);
        expect(table).toMatch(/\| model strict γ=4 \| 10\.0 \| 1\.40× \[1\.30–1\.50\] \|/);
        expect(table).toMatch(/a 75\.0% interval here/);
    });
});
