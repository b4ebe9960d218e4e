import {mkdtemp, readFile, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {describe, expect, it} from "vitest";
import {runSimulate} from "./simulateCommand.js";

const examples = new URL("../../../examples/", import.meta.url).pathname;

describe("specgate simulate", () => {
    it("reports the required fields and is reproducible bit for bit from the seed", async () => {
        const first = await runSimulate({input: join(examples, "strict-step.json"), samples: 20_000, seed: 5});
        const second = await runSimulate({input: join(examples, "strict-step.json"), samples: 20_000, seed: 5});
        const other = await runSimulate({input: join(examples, "strict-step.json"), samples: 20_000, seed: 6});
        const {elapsedMilliseconds: _a, ...a} = first.report;
        const {elapsedMilliseconds: _b, ...b} = second.report;
        const {elapsedMilliseconds: _c, ...c} = other.report;
        expect(a).toEqual(b);
        expect(a).not.toEqual(c);
        const report = first.report;
        expect(report.acceptanceRate.perPosition).toHaveLength(4);
        expect(Object.values(report.firstTokenHistogram).reduce((sum, count) => sum + count, 0)).toBe(20_000);
        expect(Object.values(report.emittedLengthHistogram).reduce((sum, count) => sum + count, 0)).toBe(20_000);
        // meanAccepted agrees with the length histogram: Σ (length − 1)·count / N
        const fromHistogram =
            Object.entries(report.emittedLengthHistogram).reduce((sum, [length, count]) => sum + (Number(length) - 1) * count, 0) / 20_000;
        expect(report.meanAccepted).toBeCloseTo(fromHistogram, 12);
        expect(report.meanAcceptanceLength).toBeCloseTo(1 + report.meanAccepted, 12);
        // Sampling error of the mean over 20k steps is ~0.012; the analytic expectation must be within 5σ.
        expect(Math.abs(report.meanAcceptanceLength - report.analytic!.expectedTokensPerStep!)).toBeLessThan(0.06);
        expect(first.summary).toMatch(/policy strict \(lossless\), γ = 4, V = 8/);
    });

    it("--exact adds the enumerated distribution; strict's first token equals the target row", async () => {
        const {report} = await runSimulate({input: join(examples, "strict-step.json"), samples: 1000, seed: 1, exact: true});
        const exact = report.exact as {firstTokenTotalVariation: number; expectedAccepted: number};
        expect(exact.firstTokenTotalVariation).toBeLessThan(1e-12);
        expect(exact.expectedAccepted).toBeCloseTo(report.analytic!.expectedTokensPerStep! - 1, 12);
    });

    it("match's expected tokens per step is match's own formula (Σ p·q), equal to exact enumeration, not strict's", async () => {
        const {report, summary} = await runSimulate({input: join(examples, "match-step.json"), samples: 1000, seed: 1, exact: true});
        const analytic = report.analytic!;
        expect(analytic.rule).toBe("match: α = Σ p·q");
        const exact = report.exact as {expectedAccepted: number};
        expect(exact.expectedAccepted).toBeCloseTo(analytic.expectedTokensPerStep! - 1, 12);
        // The example's draft over-weights the target's favourites, so min(p, q) overlaps exceed Σ p·q.
        expect(analytic.acceptancePerPosition!.every((alpha, index) => alpha < analytic.alphaPerPosition[index])).toBe(true);
        expect(summary).toMatch(/analytic acceptance \(match: α = Σ p·q\) per position/);
    });

    it("block's analytic expected tokens per step equals exact enumeration and exceeds strict's, which the summary prints", async () => {
        const {report, summary} = await runSimulate({input: join(examples, "block-step.json"), samples: 20_000, seed: 3, exact: true});
        const analytic = report.analytic!;
        expect(analytic.rule).toBe("block: α_i = E[w_i]/E[w_{i−1}], w_i = min(1, w_{i−1}·p/q)");
        const exact = report.exact as {expectedAccepted: number; firstTokenTotalVariation: number};
        expect(exact.expectedAccepted).toBeCloseTo(analytic.expectedTokensPerStep! - 1, 12);
        expect(exact.firstTokenTotalVariation).toBeLessThan(1e-12);
        const strict = await runSimulate({input: join(examples, "strict-step.json"), samples: 1000, seed: 1});
        expect(analytic.strictExpectedTokensPerStep).toBeCloseTo(strict.report.analytic!.expectedTokensPerStep!, 12);
        expect(analytic.expectedTokensPerStep!).toBeGreaterThan(analytic.strictExpectedTokensPerStep! + 0.01);
        // 20k steps: the sampled mean is within 5σ (σ ≈ 0.012) of the expectation.
        expect(Math.abs(report.meanAcceptanceLength - analytic.expectedTokensPerStep!)).toBeLessThan(0.06);
        expect(summary).toMatch(/policy block \(lossless\)/);
        expect(summary).toMatch(/strict on the same step: expected tokens per step \d\.\d{4}; block \+\d+\.\d{2}%/);
    });

    it("block with given draft ids (and with q-less ids): the analytic reach equals exact enumeration", async () => {
        const directory = await mkdtemp(join(tmpdir(), "specgate-simulate-block-"));
        const base = JSON.parse(await readFile(join(examples, "block-step.json"), "utf8"));
        for (const [name, step] of [
            ["given", {...base, draftTokens: [0, 2, 2, 5]}],
            ["q-less", {...base, draftProbs: undefined, draftTokens: [1, 1, 2, 0]}]
        ] as const) {
            const path = join(directory, `${name}.json`);
            await writeFile(path, JSON.stringify(step));
            const {report} = await runSimulate({input: path, samples: 100, seed: 1, exact: true});
            const exact = report.exact as {expectedAccepted: number};
            expect(exact.expectedAccepted, name).toBeCloseTo(report.analytic!.expectedTokensPerStep! - 1, 12);
            // Without draft rows block verification is strict (q = δ_x): no gain is possible.
            if (name === "q-less")
                expect(report.analytic!.strictExpectedTokensPerStep).toBeCloseTo(report.analytic!.expectedTokensPerStep!, 12);
        }
    });

    it("every policy is reachable from the bundled examples", async () => {
        for (const name of ["strict", "block", "match", "typical", "fuzzy", "random", "calibrated"]) {
            const {report} = await runSimulate({input: join(examples, `${name}-step.json`), samples: 2000, seed: 1});
            expect(report.policy).toBe(name);
        }
        const directory = await mkdtemp(join(tmpdir(), "specgate-simulate-"));
        for (const policy of [{kind: "greedy"}, {kind: "lossy", tau: 0.05}]) {
            const path = join(directory, `${policy.kind}.json`);
            await writeFile(path, JSON.stringify({...JSON.parse(await readFile(join(examples, "strict-step.json"), "utf8")), policy}));
            expect((await runSimulate({input: path, samples: 100, seed: 1})).report.policy).toBe(policy.kind);
        }
    });

    it("the calibrated example loads its memory file relative to the step file", async () => {
        const {report} = await runSimulate({input: join(examples, "calibrated-step.json"), samples: 100, seed: 1});
        expect(report.acceptanceRate.perPosition[0]).toBe(1);
    });

    it("a missing input file is a typed error naming the path", async () => {
        await expect(runSimulate({input: "/nonexistent/step.json", samples: 1, seed: 1})).rejects.toThrow(
            /\/nonexistent\/step\.json: cannot read file: ENOENT/
        );
    });
});
