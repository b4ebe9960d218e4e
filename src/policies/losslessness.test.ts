import {describe, expect, it} from "vitest";
import {Random} from "../random/Random.js";
import {enumerateStep} from "../simulate/enumerateStep.js";
import {simulateStep} from "../simulate/simulateStep.js";
import {parseStepInput, type StepInput} from "../simulate/StepInput.js";
import {randomProbabilityRow} from "../testing/randomRows.js";

/**
 * Exactness by enumeration: every random decision a policy can take is enumerated with its
 * probability (random/enumerateOutcomes), giving the policy's exact output distribution. For a
 * lossless policy, completing the emitted prefix with independent target samples for the positions
 * after it must give exactly Π_i p_i(y_i) — target-only sampling of γ+1 tokens (the rows of a
 * simulated step do not depend on context). Error bound 1e-12.
 */

function stepWith(policy: object, rows: {target: number[][]; draft?: number[][]}, draftTokens: number[] | "sample"): StepInput {
    return parseStepInput({policy, targetProbs: rows.target, draftProbs: rows.draft, draftTokens});
}

function randomRows(seed: number, vocabularySize: number, gamma: number) {
    const random = new Random(seed);
    const target = Array.from({length: gamma + 1}, () => Array.from(randomProbabilityRow(random, vocabularySize)));
    const draft = Array.from({length: gamma}, () => Array.from(randomProbabilityRow(random, vocabularySize)));
    return {target, draft};
}

/** Max |P_policy(completed sequence) − Π p_i| over all V^(γ+1) sequences. */
function completedSequenceError(input: StepInput): number {
    const exact = enumerateStep(input);
    const V = input.vocabularySize;
    const length = input.gamma + 1;
    const completed = new Map<string, number>();
    for (const [key, probability] of exact.sequences) {
        const prefix = key.split(",").map(Number);
        // Spread the prefix's probability over every completion, weighted by the target rows.
        const extend = (tokens: number[], weight: number): void => {
            if (tokens.length === length) {
                const fullKey = tokens.join(",");
                completed.set(fullKey, (completed.get(fullKey) ?? 0) + weight);
                return;
            }
            const row = input.targetProbs[tokens.length];
            for (let id = 0; id < V; id++) if (row[id] > 0) extend([...tokens, id], weight * row[id]);
        };
        extend(prefix, probability);
    }
    let maxError = 0;
    const visit = (tokens: number[], probability: number): void => {
        if (tokens.length === length) {
            maxError = Math.max(maxError, Math.abs((completed.get(tokens.join(",")) ?? 0) - probability));
            return;
        }
        for (let id = 0; id < V; id++) visit([...tokens, id], probability * input.targetProbs[tokens.length][id]);
    };
    visit([], 1);
    for (const key of completed.keys())
        if (key.split(",").some((token, index) => input.targetProbs[index][Number(token)] === 0))
            maxError = Math.max(maxError, completed.get(key)!);
    return maxError;
}

describe("lossless policies, exact enumeration", () => {
    it.each([1, 2, 3, 4, 5, 6])("strict with sampled drafts reproduces Π p_i exactly (random rows, seed %d)", (seed) => {
        const input = stepWith({kind: "strict"}, randomRows(seed, 4, 2), "sample");
        expect(completedSequenceError(input)).toBeLessThan(1e-12);
    });

    it("strict at γ = 3 with V = 3", () => {
        const input = stepWith({kind: "strict"}, randomRows(11, 3, 3), "sample");
        expect(completedSequenceError(input)).toBeLessThan(1e-12);
    });

    it("strict's one-step output equals p on the speculative sampling proof's case P(out=y) = q(y)min(1,p/q) + (1−α)r(y)", () => {
        const input = stepWith(
            {kind: "strict"},
            {
                target: [
                    [0.5, 0.3, 0.2, 0],
                    [0.25, 0.25, 0.25, 0.25]
                ],
                draft: [[0.1, 0.6, 0, 0.3]]
            },
            "sample"
        );
        const exact = enumerateStep(input);
        [0.5, 0.3, 0.2, 0].forEach((probability, id) => expect(Math.abs(exact.firstToken[id] - probability)).toBeLessThan(1e-12));
        // α = Σ min(p, q) = 0.1 + 0.3 + 0 + 0 = 0.4
        expect(exact.expectedAccepted).toBeCloseTo(0.4, 12);
    });

    it("strict with q-less drafts (n-gram style: no draft rows) is exact for any fixed draft token", () => {
        for (const token of [0, 1, 2, 3]) {
            const input = stepWith(
                {kind: "strict"},
                {
                    target: [
                        [0.5, 0.3, 0.2, 0],
                        [0.1, 0.2, 0.3, 0.4]
                    ]
                },
                [token]
            );
            const exact = enumerateStep(input);
            [0.5, 0.3, 0.2, 0].forEach((probability, id) => expect(Math.abs(exact.firstToken[id] - probability)).toBeLessThan(1e-12));
            // Acceptance probability is p(x): the token with p = 0 is never accepted.
            expect(exact.expectedAccepted).toBeCloseTo([0.5, 0.3, 0.2, 0][token], 12);
        }
    });

    it.each([1, 2, 3, 4, 5, 6])("block with sampled drafts reproduces Π p_i exactly (random rows, seed %d)", (seed) => {
        const input = stepWith({kind: "block"}, randomRows(seed, 4, 2), "sample");
        expect(completedSequenceError(input)).toBeLessThan(1e-12);
    });

    it("block at γ = 3 with V = 3, and never fewer accepted tokens than strict", () => {
        const rows = randomRows(11, 3, 3);
        const block = enumerateStep(stepWith({kind: "block"}, rows, "sample"));
        expect(completedSequenceError(stepWith({kind: "block"}, rows, "sample"))).toBeLessThan(1e-12);
        expect(block.expectedAccepted).toBeGreaterThanOrEqual(
            enumerateStep(stepWith({kind: "strict"}, rows, "sample")).expectedAccepted - 1e-12
        );
    });

    it("block with q-less drafts is exact for any fixed draft and accepts exactly what strict does", () => {
        const rows = {
            target: [
                [0.5, 0.3, 0.2, 0],
                [0.1, 0.2, 0.3, 0.4],
                [0.25, 0.25, 0.25, 0.25]
            ]
        };
        for (const tokens of [
            [0, 3],
            [1, 1],
            [3, 2]
        ]) {
            const input = stepWith({kind: "block"}, rows, tokens);
            expect(completedSequenceError(input)).toBeLessThan(1e-12);
            expect(enumerateStep(input).expectedAccepted).toBeCloseTo(
                enumerateStep(stepWith({kind: "strict"}, rows, tokens)).expectedAccepted,
                12
            );
        }
    });

    it.each([1, 2, 3])("match is lossless with sampled drafts (seed %d)", (seed) => {
        const input = stepWith({kind: "match"}, randomRows(seed, 3, 2), "sample");
        expect(completedSequenceError(input)).toBeLessThan(1e-12);
    });

    it("match is lossless even for fixed drafts that ignore q, but accepts only with p(x)", () => {
        const rows = randomRows(21, 4, 2);
        const input = stepWith({kind: "match"}, rows, [1, 2]);
        expect(completedSequenceError(input)).toBeLessThan(1e-12);
        const exact = enumerateStep(input);
        expect(exact.expectedAccepted).toBeCloseTo(rows.target[0][1] + rows.target[0][1] * rows.target[1][2], 12);
    });

    it("strict accepts more than match at temperature > 0 (min(1, p/q) ≥ p)", () => {
        const rows = randomRows(5, 4, 2);
        const strict = enumerateStep(stepWith({kind: "strict"}, rows, "sample"));
        const match = enumerateStep(stepWith({kind: "match"}, rows, "sample"));
        expect(strict.expectedAccepted).toBeGreaterThan(match.expectedAccepted);
    });

    it.each([
        [{kind: "fuzzy", divergence: "js", threshold: 0.39, distribution: "processed"}],
        [{kind: "typical"}],
        [{kind: "random", acceptanceProbability: 0.7}],
        [{kind: "lossy", tau: 0.05}],
        [
            {
                kind: "calibrated",
                memoryEntries: [
                    [0, 1, 10],
                    [1, 0, 10],
                    [2, 1, 10],
                    [1, 2, 10]
                ],
                onlineUpdate: false
            }
        ]
    ])("%o is not lossless and the enumeration measures by how much", (policy) => {
        const input = stepWith(policy, randomRows(3, 3, 2), "sample");
        const error = completedSequenceError(input);
        expect(error).toBeGreaterThan(1e-3);
        expect(enumerateStep(input).firstTokenTotalVariation).toBeGreaterThan(1e-3);
    });
});

// The sampling path end to end (exactness is the enumeration's job above). 10^5 samples: a sampler
// that follows the target passes χ² p > 0.001 as often at any sample size (999 in 1,000 seeds), its
// empirical total variation is about 0.003 here (under 0.007 for every seed tried), and the lossy
// policies' first-token deviations (total variation above 0.5) give p < 1e-9 with room to spare.
describe("χ² at 10^5 samples through simulate", () => {
    const rows = randomRows(8, 16, 4);
    const samples = 100_000;

    it.each(["strict", "match", "block"])("%s: the first emitted token follows the target row (χ² p > 0.001)", (kind) => {
        const report = simulateStep(stepWith({kind}, rows, "sample"), {samples, seed: 2026});
        expect(report.firstTokenVsTarget.chiSquare.pValue).toBeGreaterThan(0.001);
        expect(report.firstTokenVsTarget.totalVariation).toBeLessThan(0.015);
    });

    it.each([[{kind: "fuzzy", divergence: "js", threshold: 0.6, distribution: "processed"}], [{kind: "typical"}]])(
        "%o: the deviation is detected (χ² p < 1e-9) and reported",
        (policy) => {
            const input = stepWith(policy, rows, "sample");
            const report = simulateStep(input, {samples, seed: 2026});
            expect(report.firstTokenVsTarget.chiSquare.pValue).toBeLessThan(1e-9);
            // The simulated deviation agrees with the exact enumeration to sampling precision.
            const exactDeviation = enumerateStep(
                stepWith(policy, {target: rows.target.slice(0, 2), draft: rows.draft.slice(0, 1)}, "sample")
            ).firstTokenTotalVariation;
            expect(exactDeviation).toBeGreaterThan(0.01);
            expect(Math.abs(report.firstTokenVsTarget.totalVariation - exactDeviation)).toBeLessThan(0.015);
        }
    );
});
