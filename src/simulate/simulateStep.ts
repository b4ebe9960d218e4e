import {overlap, totalVariation} from "../divergences/divergences.js";
import {createPolicy, type PolicyResources} from "../policies/createPolicy.js";
import {SeededChance} from "../random/SeededChance.js";
import {expectedTokensPerStepFromPositions} from "../speedup/speedupModel.js";
import {analyticAcceptance} from "./analyticAcceptance.js";
import {chiSquareGoodnessOfFit, type ChiSquareResult} from "../statistics/chiSquareGoodnessOfFit.js";
import {createStepRunner} from "./runStep.js";
import type {StepInput} from "./StepInput.js";

export interface SimulationReport {
    policy: string;
    lossless: boolean;
    gamma: number;
    vocabularySize: number;
    samples: number;
    seed: number;
    draftTokens: number[] | "sample";
    /** vLLM convention: accepted / draft tokens; per position: accepted at i / steps. */
    acceptanceRate: {overall: number; perPosition: number[]};
    /** Accepted at i / steps that reached position i (all earlier positions accepted). */
    conditionalAcceptanceRate: number[];
    /** Mean draft tokens accepted per step, not counting the recovered or bonus token. */
    meanAccepted: number;
    /** vLLM's mean acceptance length: 1 + meanAccepted. */
    meanAcceptanceLength: number;
    /** Counts of the first emitted token, keyed by token id (ids never emitted are omitted). */
    firstTokenHistogram: Record<string, number>;
    /** Counts of steps by number of emitted tokens, keyed "1".."γ+1". */
    emittedLengthHistogram: Record<string, number>;
    finalTokenSourceCounts: Record<string, number>;
    /**
     * The first emitted token against the target's first row. For a lossless policy with drafts
     * drawn from the draft rows ("sample") or a policy that ignores the drafts' origin (`match`), the
     * two must agree; a large χ² here is a policy's deviation from target-only sampling.
     */
    firstTokenVsTarget: {totalVariation: number; chiSquare: ChiSquareResult};
    /**
     * Analytic α_i = Σ min(p_i, q_i) (the draft's overlap with the target), and — for the policies
     * with a closed form (strict, match, greedy, block) — that policy's own acceptance per position, its
     * rule and the expected tokens per step it implies. For `block`, also strict's expected tokens
     * per step on the same step, the token-wise baseline block verification never falls below.
     */
    analytic?: {
        alphaPerPosition: number[];
        rule: string | null;
        acceptancePerPosition: number[] | null;
        expectedTokensPerStep: number | null;
        strictExpectedTokensPerStep?: number | null;
    };
    elapsedMilliseconds: number;
}

/** Run one verification step `samples` times with a seeded generator and summarise the outcomes. */
export function simulateStep(input: StepInput, options: {samples: number; seed: number; resources?: PolicyResources}): SimulationReport {
    const policy = createPolicy(input.policy, {vocabularySize: input.vocabularySize, ...options.resources});
    const run = createStepRunner(input, policy);
    const chance = new SeededChance(options.seed);
    const gamma = input.gamma;
    const acceptedAt = new Float64Array(gamma);
    const reachedAt = new Float64Array(gamma);
    const lengthCounts = new Float64Array(gamma + 1);
    const firstTokenCounts = new Float64Array(input.vocabularySize);
    const sourceCounts: Record<string, number> = {};
    let acceptedTotal = 0;

    const started = performance.now();
    for (let sample = 0; sample < options.samples; sample++) {
        const result = run(chance);
        acceptedTotal += result.acceptedCount;
        for (let position = 0; position < result.positions.length; position++) {
            reachedAt[position]++;
            if (result.positions[position].accepted) acceptedAt[position]++;
        }
        lengthCounts[result.emitted.length - 1]++;
        firstTokenCounts[result.emitted[0]]++;
        sourceCounts[result.finalTokenSource] = (sourceCounts[result.finalTokenSource] ?? 0) + 1;
    }
    const elapsedMilliseconds = performance.now() - started;

    const samples = options.samples;
    const empirical = Float64Array.from(firstTokenCounts, (count) => count / samples);
    const draftProbs = input.draftProbs;
    const alphaPerPosition = draftProbs?.map((row, index) => overlap(input.targetProbs[index], row));
    const closedForm = analyticAcceptance(input);
    const strictForm = input.policy.kind === "block" ? analyticAcceptance({...input, policy: {kind: "strict"}}) : undefined;
    return {
        policy: input.policy.kind,
        lossless: policy.lossless,
        gamma,
        vocabularySize: input.vocabularySize,
        samples,
        seed: options.seed,
        draftTokens: input.draftTokens === "sample" ? "sample" : [...input.draftTokens],
        acceptanceRate: {
            overall: gamma === 0 ? 0 : acceptedTotal / (samples * gamma),
            perPosition: [...acceptedAt].map((count) => count / samples)
        },
        conditionalAcceptanceRate: [...acceptedAt].map((count, index) => (reachedAt[index] === 0 ? 0 : count / reachedAt[index])),
        meanAccepted: acceptedTotal / samples,
        meanAcceptanceLength: 1 + acceptedTotal / samples,
        firstTokenHistogram: sparseCounts(firstTokenCounts),
        emittedLengthHistogram: Object.fromEntries([...lengthCounts].map((count, index) => [String(index + 1), count])),
        finalTokenSourceCounts: sourceCounts,
        firstTokenVsTarget: {
            totalVariation: totalVariation(empirical, input.targetProbs[0]),
            chiSquare: chiSquareGoodnessOfFit(firstTokenCounts, input.targetProbs[0])
        },
        ...(alphaPerPosition != null || closedForm != null || strictForm != null
            ? {
                  analytic: {
                      alphaPerPosition: alphaPerPosition ?? [],
                      rule: closedForm?.rule ?? null,
                      acceptancePerPosition: closedForm?.perPosition ?? null,
                      expectedTokensPerStep: closedForm == null ? null : expectedTokensPerStepFromPositions(closedForm.perPosition),
                      ...(strictForm === undefined
                          ? {}
                          : {
                                strictExpectedTokensPerStep:
                                    strictForm == null ? null : expectedTokensPerStepFromPositions(strictForm.perPosition)
                            })
                  }
              }
            : {}),
        elapsedMilliseconds
    };
}

function sparseCounts(counts: Float64Array): Record<string, number> {
    const result: Record<string, number> = {};
    counts.forEach((count, id) => {
        if (count > 0) result[String(id)] = count;
    });
    return result;
}
