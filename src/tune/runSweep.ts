import type {BatteryRunOptions} from "./BatteryRunOptions.js";
import {InvalidInputError} from "../errors.js";
import {policyLabel} from "../policies/parsePolicySpec.js";
import type {PolicyConfig} from "../policies/policyConfigSchema.js";
import {resolveCorrectionMemory} from "../correctionMemory/resolveCorrectionMemory.js";
import {assertSameVocabulary} from "../backend/assertSameVocabulary.js";
import {assertAccuracyBattery} from "./assertAccuracyBattery.js";
import {measureScorePreservingOracle, type ScorePreservingOracleMeasurement} from "./measureScorePreservingOracle.js";
import {matchedAcceptanceProbability} from "./matchedAcceptanceProbability.js";
import {type ConfigurationMeasurement, measureConfiguration} from "./measureConfiguration.js";
import {oneStepVerificationSeconds, stepCostsOf} from "./oneStepVerificationSeconds.js";
import {paretoFrontier} from "./paretoFrontier.js";
import {randomAllocationLine} from "./randomAllocationLine.js";
import type {SweepPoint, SweepResult, SweepRole} from "./SweepResult.js";
import {drafterLabel} from "../engine/drafters/parseDrafterSpec.js";

export interface SweepOptions extends BatteryRunOptions {
    readonly policies: readonly PolicyConfig[];
    /**
     * Also measure the score-preserving oracle at each γ (measureScorePreservingOracle): an estimate
     * of the mean acceptance length a lossy policy could reach here without losing an item. Temperature 0 only.
     */
    readonly oracle?: boolean;
}

/** Policies whose acceptance is a tunable relaxation: each gets a random-acceptance twin (Fuzzy SD paper App. E). */
const relaxedKinds = new Set(["fuzzy", "calibrated", "lossy"]);

/**
 * Every configuration (policy × γ) on the battery, with the baselines of the same run: target-only,
 * draft-only, strict SD at each γ, random acceptance at each relaxed configuration's acceptance
 * rate, and the random-allocation line between draft-only and target-only. All share item seeds.
 */
export async function runSweep(options: SweepOptions): Promise<SweepResult> {
    assertAccuracyBattery(options.items);
    if (options.gammas.length === 0 || options.gammas.some((gamma) => !Number.isInteger(gamma) || gamma < 1))
        throw new InvalidInputError(`must be positive integers, got ${options.gammas.join(",") || "none"}`, "gammas");
    if (options.oracle === true && options.sampling.temperature !== 0)
        throw new InvalidInputError(`is defined for greedy decoding; got temperature ${options.sampling.temperature}`, "oracle");
    // Everything a configuration will need is checked before the first one runs.
    assertSameVocabulary(options.target, options.draft, "draft");
    for (const policy of options.policies)
        await resolveCorrectionMemory(
            policy,
            {size: options.target.vocabularySize, identity: options.target.vocabularyIdentity()},
            options.baseDirectory
        );
    const settings = {
        sampling: options.sampling,
        draftSampling: options.draftSampling ?? "sample",
        maxTokens: options.maxTokens,
        stop: options.stop ?? [],
        seed: options.seed,
        drafter: options.drafter,
        chatTemplate: options.chatTemplate
    };
    const measured: Array<{
        label: string;
        role: SweepRole;
        policy: string;
        gamma: number | null;
        matchedTo?: string;
        measurement: ConfigurationMeasurement;
    }> = [];
    const run = async (label: string, role: SweepRole, policy: PolicyConfig, gamma: number | null, matchedTo?: string) => {
        const correctionMemory = await resolveCorrectionMemory(
            policy,
            {size: options.target.vocabularySize, identity: options.target.vocabularyIdentity()},
            options.baseDirectory
        );
        const model = role === "draft-only" ? options.draft : options.target;
        const draft = gamma == null ? undefined : options.draft;
        const measurement = await measureConfiguration(
            model,
            draft,
            options.items,
            {...settings, policy, gamma: gamma ?? 0},
            {correctionMemory, signal: options.signal, warmUp: true}
        );
        measured.push({
            label,
            role,
            policy: role === "target-only" || role === "draft-only" ? role : policyLabel(policy),
            gamma,
            matchedTo,
            measurement
        });
        options.onProgress?.(
            `${label}: accuracy ${(100 * measurement.accuracy).toFixed(1)}%, ${measurement.tokensPerSecond.toFixed(1)} tok/s, ALen ${measurement.meanAcceptanceLength.toFixed(2)}`
        );
        return measurement;
    };

    const strict: PolicyConfig = {kind: "strict"};
    await run("target-only", "target-only", strict, null);
    await run("draft-only", "draft-only", strict, null);
    const labels = new Set<string>();
    for (const gamma of options.gammas) {
        await run(`strict γ=${gamma}`, "strict", strict, gamma);
        for (const policy of options.policies) {
            const label = `${policyLabel(policy)} γ=${gamma}`;
            if (policy.kind === "strict" || labels.has(label)) continue;
            labels.add(label);
            const measurement = await run(label, "policy", policy, gamma);
            if (!relaxedKinds.has(policy.kind) || measurement.draftTokens === 0) continue;
            const probability = Number(matchedAcceptanceProbability(measurement.acceptanceRate, measurement.draftedPerPosition).toFixed(4));
            await run(
                `random:${probability} γ=${gamma} (≈ ${label})`,
                "random-acceptance",
                {kind: "random", acceptanceProbability: probability},
                gamma,
                label
            );
        }
    }

    const oracle: ScorePreservingOracleMeasurement[] = [];
    if (options.oracle === true) {
        for (const gamma of options.gammas) {
            const measurement = await measureScorePreservingOracle(options.target, options.draft, options.items, {
                gamma,
                maxTokens: options.maxTokens,
                stop: options.stop,
                signal: options.signal,
                chatTemplate: options.chatTemplate
            });
            oracle.push(measurement);
            options.onProgress?.(
                `score-preserving oracle γ=${gamma}: ALen ${measurement.oracle.meanAcceptanceLength.toFixed(2)} vs strict ${measurement.strict.meanAcceptanceLength.toFixed(2)}`
            );
        }
    }

    const targetOnly = measured[0].measurement;
    const draftOnly = measured[1].measurement;
    const line = randomAllocationLine(draftOnly, targetOnly);
    const frontier = paretoFrontier(measured.map(({measurement}) => measurement));
    // The single-model rows are the same in both regimes, so the random-allocation line is too.
    const costs = stepCostsOf(targetOnly, draftOnly);
    const oneStep =
        costs == null
            ? null
            : measured.map(({role, measurement}) => {
                  const seconds = oneStepVerificationSeconds(measurement, costs, role === "draft-only" ? "draft" : "target");
                  return {accuracy: measurement.accuracy, tokensPerSecond: seconds > 0 ? measurement.emittedTokens / seconds : 0};
              });
    const oneStepFrontier = oneStep == null ? null : paretoFrontier(oneStep);
    const points: SweepPoint[] = measured.map(({measurement, ...identity}, index) => ({
        ...identity,
        ...measurement,
        speedup: targetOnly.tokensPerSecond > 0 ? measurement.tokensPerSecond / targetOnly.tokensPerSecond : 0,
        onFrontier: frontier[index],
        randomAllocationAccuracy: line.accuracyAtSpeed(measurement.tokensPerSecond),
        oneStepVerification:
            oneStep == null
                ? null
                : {
                      tokensPerSecond: oneStep[index].tokensPerSecond,
                      speedup: targetOnly.tokensPerSecond > 0 ? oneStep[index].tokensPerSecond / targetOnly.tokensPerSecond : 0,
                      onFrontier: oneStepFrontier![index],
                      randomAllocationAccuracy: line.accuracyAtSpeed(oneStep[index].tokensPerSecond)
                  }
    }));
    return {
        settings: {
            ...settings,
            drafter: drafterLabel(options.drafter ?? {kind: "model"}),
            items: options.items.length,
            policies: options.policies.map(policyLabel),
            gammas: [...options.gammas]
        },
        points,
        randomAllocation: line.sample(20),
        ...(options.oracle === true ? {oracle} : {})
    };
}
