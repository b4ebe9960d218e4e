import {describe, expect, it} from "vitest";

import {Random} from "../random/Random.js";
import {equivalenceRejectionProbability} from "./pairedEquivalencePower.js";
import {criticalUpperScore, pairedScoreEquivalence, upperRejectionThresholds} from "./pairedScoreEquivalence.js";
import type {PairedTable} from "./pairedTost.js";
import {type PairedOutcome, promptLevelTable} from "./promptLevelTable.js";
import {tangoScore} from "./tangoScore.js";

const MARGIN = 0.03;
const ALPHA = 0.05;
const REPLICATES = 4000;

/**
 * Seeds of one prompt at the upper null d = +margin with discordance ψ: with probability
 * `correlation` a prompt's seeds all share one draw (perfectly correlated), otherwise each seed draws
 * on its own. A draw is target-only pass (b) with probability (ψ − Δ)/2, speculative-only pass (c)
 * with (ψ + Δ)/2, and both pass otherwise.
 */
function drawSeeds(random: Random, prompts: number, seeds: number, discordance: number, correlation: number): PairedOutcome[] {
    const targetOnly = (discordance - MARGIN) / 2;
    const speculativeOnly = (discordance + MARGIN) / 2;
    const outcomes: PairedOutcome[] = [];
    for (let prompt = 0; prompt < prompts; prompt++) {
        const shared = random.nextDouble() < correlation;
        let cell = 0;
        for (let seed = 0; seed < seeds; seed++) {
            if (!shared || seed === 0) {
                const u = random.nextDouble();
                cell = u < targetOnly ? 1 : u < targetOnly + speculativeOnly ? 2 : 0;
            }
            outcomes.push({prompt: `p${prompt}`, targetOnly: cell !== 2, speculative: cell !== 1});
        }
    }
    return outcomes;
}

/** The test's decision from its critical score: both one-sided scores at or below z*. */
function declaresEquivalence(table: PairedTable, pairs: number, critical: number): boolean {
    return (
        tangoScore(pairs, table.targetOnlyPass, table.speculativeOnlyPass, MARGIN) <= critical &&
        tangoScore(pairs, table.speculativeOnlyPass, table.targetOnlyPass, MARGIN) <= critical
    );
}

/** Seeds counted as independent pairs: the pooled seed-level table. */
function pooledTable(outcomes: readonly PairedOutcome[]): PairedTable {
    const count = (target: boolean, speculative: boolean) =>
        outcomes.filter((outcome) => outcome.targetOnly === target && outcome.speculative === speculative).length;
    return {
        bothPass: count(true, true),
        targetOnlyPass: count(true, false),
        speculativeOnlyPass: count(false, true),
        bothFail: count(false, false)
    };
}

describe("the paired equivalence test with several seeds per prompt (simulated size at d = +3pp)", () => {
    const critical = new Map<number, number>();
    const criticalFor = (pairs: number) => {
        if (!critical.has(pairs)) critical.set(pairs, criticalUpperScore(pairs, MARGIN, ALPHA) as number);
        return critical.get(pairs) as number;
    };
    const simulate = (prompts: number, seeds: number, discordance: number, correlation: number) => {
        const random = new Random(20261128);
        let promptLevel = 0;
        let pooled = 0;
        for (let replicate = 0; replicate < REPLICATES; replicate++) {
            const outcomes = drawSeeds(random, prompts, seeds, discordance, correlation);
            if (declaresEquivalence(promptLevelTable(outcomes), prompts, criticalFor(prompts))) promptLevel++;
            if (declaresEquivalence(pooledTable(outcomes), prompts * seeds, criticalFor(prompts * seeds))) pooled++;
        }
        return {promptLevel: promptLevel / REPLICATES, pooled: pooled / REPLICATES};
    };

    it("decides from the critical score exactly as the p-value does, on seed fractions too", () => {
        const random = new Random(7);
        for (let replicate = 0; replicate < 12; replicate++) {
            const table = promptLevelTable(drawSeeds(random, 100, 2, 0.04, 0.5));
            expect(pairedScoreEquivalence(table, MARGIN, ALPHA).equivalent).toBe(declaresEquivalence(table, 100, criticalFor(100)));
        }
    });

    it.each([
        [100, 2, 0.04, 1],
        [100, 2, 0.05, 1],
        [100, 2, 0.03, 0.5],
        [100, 2, 0.04, 0.5],
        [50, 4, 0.03, 1],
        [50, 4, 0.03, 0.5]
    ])(
        "keeps the size at most α on %s prompts × %s seeds, discordance %s, seed correlation %s",
        (prompts, seeds, discordance, correlation) => {
            const size = simulate(prompts, seeds, discordance, correlation);
            expect(size.promptLevel).toBeLessThanOrEqual(ALPHA);
            // Counting each seed as a pair is what the prompt level corrects: with 4 correlated seeds of 50
            // prompts it declares equivalence about 0.22 of the time (perfectly correlated) or 0.09 (partly).
            if (seeds === 4) expect(size.pooled).toBeGreaterThan(ALPHA);
        }
    );

    it("matches the exact size with perfectly correlated seeds at the worst discordance, ψ = Δ", () => {
        // Perfectly correlated seeds make the prompt-level table the plain table of 100 prompts, whose exact size is below α.
        const exact = equivalenceRejectionProbability(upperRejectionThresholds(100, MARGIN, ALPHA), 0, MARGIN);
        expect(exact).toBeLessThanOrEqual(ALPHA);
        const simulated = simulate(100, 2, MARGIN, 1).promptLevel;
        const standardError = Math.sqrt((exact * (1 - exact)) / REPLICATES);
        expect(Math.abs(simulated - exact)).toBeLessThan(4 * standardError);
    });
});

describe("promptLevelTable", () => {
    it("adds each prompt's share of its seeds to each cell, so the cells sum to the number of prompts", () => {
        const outcomes: PairedOutcome[] = [
            {prompt: "a", targetOnly: true, speculative: true},
            {prompt: "a", targetOnly: true, speculative: false},
            {prompt: "b", targetOnly: false, speculative: true},
            {prompt: "b", targetOnly: false, speculative: true},
            {prompt: "c", targetOnly: false, speculative: false}
        ];
        expect(promptLevelTable(outcomes)).toEqual({bothPass: 0.5, targetOnlyPass: 0.5, speculativeOnlyPass: 1, bothFail: 1});
    });

    it("is the plain table of counts with one sample per prompt", () => {
        const table = promptLevelTable([
            {prompt: "a", targetOnly: true, speculative: false},
            {prompt: "b", targetOnly: true, speculative: true}
        ]);
        expect(table).toEqual({bothPass: 1, targetOnlyPass: 1, speculativeOnlyPass: 0, bothFail: 0});
    });
});
