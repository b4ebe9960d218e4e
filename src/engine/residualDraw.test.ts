import {describe, expect, it} from "vitest";
import type {CandidateRows} from "../backend/residualSequence.js";
import {Random} from "../random/Random.js";
import {SeededChance} from "../random/SeededChance.js";
import {chiSquareGoodnessOfFit} from "../statistics/chiSquareGoodnessOfFit.js";
import type {DrawnDraft} from "./drafters/Drafter.js";
import {verifyOnCandidates} from "./residualDraw.js";

/**
 * verifyOnCandidates on one drafted row and the bonus row, with the device's reads simulated from
 * known rows: x ~ q, K candidates ~ p. The first emitted token must follow p (speculative sampling is
 * lossless), whether the residual comes from an accepted candidate or, when all K fail, from the rows.
 */
const p = [0.4, 0.25, 0.15, 0.1, 0.06, 0.04];
const q = [0.1, 0.5, 0.05, 0.3, 0.04, 0.01];

function draw(row: readonly number[], uniform: number): number {
    let cumulative = 0;
    for (const [id, probability] of row.entries()) {
        cumulative += probability;
        if (uniform < cumulative) return id;
    }
    return row.length - 1;
}

/** `trials` first tokens with K candidates per row; q absent: a draft without probabilities (x = `fixed`, q = δ_x). */
async function firstTokens(width: number, trials: number, seed: number, fixed?: number) {
    const random = new Random(seed);
    const chance = new SeededChance(seed + 1);
    const observed = new Float64Array(p.length);
    let fallbacks = 0;
    let rejections = 0;
    let draftReads = 0;
    for (let trial = 0; trial < trials; trial++) {
        const drafted = fixed ?? draw(q, random.nextDouble());
        const candidates = [0, 1].map(() => Array.from({length: width}, () => draw(p, random.nextDouble())));
        const rows: CandidateRows = {
            draftedProbabilities: [p[drafted]!, 0],
            candidates,
            candidateProbabilities: candidates.map((ids) => ids.map((id) => p[id]!)),
            hostRows: 0
        };
        const draft: DrawnDraft | undefined =
            fixed !== undefined
                ? undefined
                : {
                      probabilities: [q[drafted]!],
                      probabilitiesAt: (row, ids) => {
                          expect(row).toBe(0);
                          draftReads++;
                          return Promise.resolve(ids.map((id) => q[id]!));
                      },
                      rowAt: () => Promise.resolve(Float64Array.from(q))
                  };
        const result = await verifyOnCandidates({
            rows,
            drafted: [drafted, -1],
            draft,
            chance,
            targetRow: () => Promise.resolve(Float64Array.from(p))
        });
        expect(result.ids).toHaveLength(2);
        if (result.ids[0] !== drafted) rejections++;
        if (result.fallback) fallbacks++;
        observed[result.ids[0]!]++;
    }
    return {observed, fallbacks, rejections, draftReads};
}

describe("verifyOnCandidates", () => {
    it.each([
        {name: "K = 16", width: 16},
        {name: "K = 1 (the whole-row fallback often)", width: 1}
    ])("$name: the first token follows p (χ², 20000 trials)", async ({width}) => {
        const {observed, fallbacks, rejections, draftReads} = await firstTokens(width, 20000, 7);
        const test = chiSquareGoodnessOfFit(observed, Float64Array.from(p));
        expect(test.bins).toBe(p.length);
        expect(test.pValue).toBeGreaterThan(0.001);
        // Rejections are common with these rows (1 − Σ min(p, q) = 0.41), and q is read only at them.
        expect(rejections).toBeGreaterThan(4000);
        expect(draftReads).toBeLessThanOrEqual(rejections);
        if (width === 1) expect(fallbacks).toBeGreaterThan(1000);
        else expect(fallbacks).toBeLessThan(rejections / 10);
    });

    it("verifies a draft without probabilities as q = δ (K = 2): the first token still follows p", async () => {
        const {observed, rejections} = await firstTokens(2, 20000, 11, 0);
        const test = chiSquareGoodnessOfFit(observed, Float64Array.from(p));
        expect(test.pValue).toBeGreaterThan(0.001);
        expect(rejections).toBeGreaterThan(10000);
    });

    it("never emits the rejected id, and fills the rows after a rejection with the residual draw", async () => {
        const chance = new SeededChance(3);
        for (let trial = 0; trial < 200; trial++) {
            // p(3) = 0.1 against q(3) = 0.3: rejected two times in three; every candidate is the rejected id.
            const result = await verifyOnCandidates({
                rows: {
                    draftedProbabilities: [p[3]!, 0, 0],
                    candidates: [
                        [3, 3],
                        [0, 0],
                        [1, 1]
                    ],
                    candidateProbabilities: [
                        [0.1, 0.1],
                        [0.4, 0.4],
                        [0.25, 0.25]
                    ],
                    hostRows: 0
                },
                drafted: [3, 0, -1],
                draft: {
                    probabilities: [q[3]!, q[0]!],
                    probabilitiesAt: (_row, ids) => Promise.resolve(ids.map((id) => q[id]!)),
                    rowAt: () => Promise.resolve(Float64Array.from(q))
                },
                chance,
                targetRow: () => Promise.resolve(Float64Array.from(p))
            });
            if (result.ids[0] === 3) continue;
            expect(result.fallback).toBe(true);
            expect(result.ids[1]).toBe(result.ids[0]);
            expect(result.ids[2]).toBe(result.ids[0]);
            // The residual max(0, p − q) is positive at ids 0, 2, 4 and 5 only.
            expect([0, 2, 4, 5]).toContain(result.ids[0]);
        }
    });
});
