import {describe, expect, it} from "vitest";
import {type BenchRow, benchConclusion} from "./runBench.js";

function row(label: string, speedup: number, min: number, max: number, exactMatchRate = 1): BenchRow {
    return {label, speedup, speedupRange: {min, max}, exactMatchRate} as BenchRow;
}
const baseline = row("target-only", 1, 1, 1);

describe("the line that ends the bench table", () => {
    it("names the fastest exact row and whether every round is on the same side of 1×", () => {
        expect(benchConclusion([baseline, row("model strict γ=4", 1.4, 1.3, 1.5), row("model greedy γ=1", 1.1, 0.9, 1.2)], 3)).toBe(
            "conclusion: model strict γ=4 is the fastest exact configuration, 1.40× [1.30–1.50]: faster than target-only in every round"
        );
        expect(benchConclusion([baseline, row("model strict γ=4", 1.05, 0.95, 1.1)], 3)).toBe(
            "conclusion: model strict γ=4 is the fastest exact configuration at 1.05×, but its rounds [0.95–1.10] straddle 1×: no reliable gain"
        );
    });

    it("says when nothing exact beats target-only, names a faster lossy row's price, and distrusts one round", () => {
        expect(
            benchConclusion([baseline, row("model strict γ=4", 0.83, 0.75, 0.9), row("model fuzzy:js:0.4 γ=4", 0.9, 0.85, 0.95, 0.75)], 1)
        ).toBe(
            "conclusion: no exact configuration beat target-only (the best, model strict γ=4, ran at 0.83× [0.75–0.90]): " +
                "here the models' per-call cost outweighs what acceptance saves; the analytic limit is what carries over to a compute-bound target; " +
                "model fuzzy:js:0.4 γ=4 is faster (0.90×) but changed the output on 25% of prompts" +
                " (one round, so no range: run --repeats 3 or more before trusting it)"
        );
    });
});
