import fc from "fast-check";
import {describe, expect, it} from "vitest";
import {processLogits} from "../distributions/processLogits.js";
import {Random} from "../random/Random.js";
import {SeededChance} from "../random/SeededChance.js";
import {randomProbabilityRow} from "../testing/randomRows.js";
import {createPolicy} from "./createPolicy.js";
import {CorrectionMemory} from "./CorrectionMemory.js";
import {parsePolicyConfig} from "./createPolicy.js";
import type {VerificationStep} from "./VerificationPolicy.js";

const allPolicies = [
    {kind: "greedy"},
    {kind: "strict"},
    {kind: "block"},
    {kind: "match"},
    {kind: "typical"},
    {kind: "fuzzy", threshold: 0.3},
    {kind: "fuzzy", divergence: "kl-draft-target", threshold: 0.5, topK: 3},
    {kind: "calibrated", frequencyThreshold: 1, tau: 0.1},
    {kind: "lossy", tau: 0.2},
    {kind: "random", acceptanceProbability: 0.5}
];

function buildStep(seed: number, vocabularySize: number, gamma: number, temperature: number): VerificationStep {
    const random = new Random(seed);
    const logitRow = () => Float64Array.from({length: vocabularySize}, () => 4 * (random.nextDouble() - 0.5));
    const targetLogits = Array.from({length: gamma + 1}, logitRow);
    // The draft is a noisy copy of the target, so steps accept some tokens and reject others.
    const draftLogits = targetLogits.slice(0, gamma).map((row) => row.map((value) => value + 2 * (random.nextDouble() - 0.5)));
    const sampling = {temperature, topK: 0, topP: 1, minP: 0};
    const draftProbs = draftLogits.map((row) => processLogits(row, sampling));
    const chance = new SeededChance(seed);
    const draftTokens = draftProbs.map((row) =>
        chance.choose(
            row,
            row.reduce((sum, value) => sum + value, 0)
        )
    );
    return {draftTokens, targetProbs: targetLogits.map((row) => processLogits(row, sampling)), draftProbs, targetLogits, draftLogits};
}

describe("invariants of every policy (property-based)", () => {
    it.each(allPolicies)("%o: 1..γ+1 tokens, accepted prefix = draft prefix, ids in range, diagnostics consistent", (policyConfig) => {
        fc.assert(
            fc.property(
                fc.integer({min: 0, max: 2 ** 31}),
                fc.integer({min: 2, max: 12}),
                fc.integer({min: 0, max: 6}),
                fc.constantFrom(0, 0.5, 1, 2),
                (seed, vocabularySize, gamma, temperature) => {
                    const step = buildStep(seed, vocabularySize, gamma, temperature);
                    const policy = createPolicy(parsePolicyConfig(policyConfig), {correctionMemory: new CorrectionMemory(vocabularySize)});
                    const result = policy.verify(step, new SeededChance(seed));
                    expect(result.emitted.length).toBeGreaterThanOrEqual(1);
                    expect(result.emitted.length).toBeLessThanOrEqual(gamma + 1);
                    expect(result.acceptedCount).toBe(result.emitted.length - 1);
                    expect(result.emitted.slice(0, result.acceptedCount)).toEqual(
                        Array.from(step.draftTokens).slice(0, result.acceptedCount)
                    );
                    for (const token of result.emitted) expect(token >= 0 && token < vocabularySize && Number.isInteger(token)).toBe(true);
                    expect(result.positions.length).toBe(Math.min(result.acceptedCount + 1, gamma));
                    result.positions.forEach((diagnostic, index) => {
                        expect(diagnostic.position).toBe(index);
                        expect(diagnostic.accepted).toBe(index < result.acceptedCount);
                    });
                    expect(result.finalTokenSource === "bonus").toBe(result.acceptedCount === gamma);
                }
            ),
            {numRuns: 150}
        );
    });

    it.each(allPolicies)("%o is deterministic for a given seed", (policyConfig) => {
        const step = buildStep(99, 16, 5, 1);
        const run = () =>
            createPolicy(parsePolicyConfig(policyConfig), {correctionMemory: new CorrectionMemory(16)}).verify(
                step,
                new SeededChance(1234)
            );
        expect(run()).toEqual(run());
    });

    it.each(["greedy", "strict", "block", "match", "typical"])(
        "%s at temperature 0 emits exactly the target-only greedy continuation of the draft",
        (kind) => {
            for (let seed = 0; seed < 50; seed++) {
                const step = buildStep(seed, 8, 4, 0);
                const greedy = createPolicy(parsePolicyConfig({kind: "greedy"})).verify(step, new SeededChance(seed));
                const result = createPolicy(parsePolicyConfig({kind})).verify(step, new SeededChance(seed + 1));
                expect(result.emitted).toEqual(greedy.emitted);
            }
        }
    );

    it.each(allPolicies)(
        "%o at temperature 0: every token not taken from the draft is the target argmax, and two seeds agree",
        (policyConfig) => {
            for (let seed = 0; seed < 30; seed++) {
                const step = buildStep(seed, 8, 4, 0);
                const make = () => createPolicy(parsePolicyConfig(policyConfig), {correctionMemory: new CorrectionMemory(8)});
                const first = make().verify(step, new SeededChance(1));
                const second = make().verify(step, new SeededChance(2));
                if (policyConfig.kind !== "random") expect(second).toEqual(first);
                const last = first.emitted.length - 1;
                expect(step.targetProbs[last][first.emitted[last]]).toBe(1);
            }
        }
    );

    it("lossless policies never emit a token the target row gives probability 0", () => {
        const random = new Random(5);
        for (let trial = 0; trial < 300; trial++) {
            const vocabularySize = 6;
            const targetProbs = Array.from({length: 4}, () => randomProbabilityRow(random, vocabularySize, 0.5));
            const draftProbs = Array.from({length: 3}, () => randomProbabilityRow(random, vocabularySize, 0.5));
            const draftTokens = draftProbs.map((row) => row.findIndex((value) => value > 0));
            for (const kind of ["strict", "block", "match", "greedy"]) {
                const result = createPolicy(parsePolicyConfig({kind})).verify(
                    {draftTokens, targetProbs, draftProbs},
                    new SeededChance(trial)
                );
                result.emitted.forEach((token, index) => expect(targetProbs[index][token]).toBeGreaterThan(0));
            }
        }
    });
});
