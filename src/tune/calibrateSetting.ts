import type {BatteryRunOptions} from "./BatteryRunOptions.js";
import type {BatteryItem} from "../batteries/BatteryItem.js";
import {InvalidInputError} from "../errors.js";
import {policyLabel} from "../policies/parsePolicySpec.js";
import type {PolicyConfig} from "../policies/policyConfigSchema.js";
import {resolveCorrectionMemory} from "../correctionMemory/resolveCorrectionMemory.js";
import {assertSameVocabulary} from "../backend/assertSameVocabulary.js";
import {assertAccuracyBattery} from "./assertAccuracyBattery.js";
import {type ConfigurationMeasurement, measureConfiguration} from "./measureConfiguration.js";
import {oneStepVerificationSeconds, type StepCosts, stepCostsOf} from "./oneStepVerificationSeconds.js";
import {splitBattery} from "./splitBattery.js";
import type {ThresholdGrid} from "./thresholdGrid.js";

export type CalibrationPhase = "calibration" | "evaluation";

export type CalibrationSpeed = "measured" | "one-step";

export interface CalibrationOptions extends BatteryRunOptions {
    readonly grid: ThresholdGrid;
    /** Largest tolerated accuracy loss against strict SD at the same γ, in percentage points. */
    readonly maxAccuracyDrop: number;
    readonly calibrationShare: number;
    /**
     * What "fastest" means: measured tokens/s (default), or tokens/s if verification cost one target
     * step (oneStepVerificationSeconds) — the regime of a GPU serving a large target, for choosing on
     * a machine whose verification cost curve is not the deployment's.
     */
    readonly speed?: CalibrationSpeed;
    /** Called when a phase starts, before any of its items is generated. */
    readonly onPhase?: (phase: CalibrationPhase) => void;
}

export interface CalibrationRow extends ConfigurationMeasurement {
    readonly label: string;
    readonly policy: string;
    /** Null for strict SD and target-only rows. */
    readonly threshold: number | null;
    /** Null for target-only. */
    readonly gamma: number | null;
}

export interface CalibrationCandidate extends CalibrationRow {
    readonly threshold: number;
    readonly gamma: number;
    /** Strict SD accuracy minus this accuracy, in percentage points, at the same γ on the same split. */
    readonly accuracyDrop: number;
    readonly withinBudget: boolean;
    /**
     * Whether it emits more tokens per verification than strict SD at the same γ (higher mean
     * acceptance length). A lossy setting that does not can only cost accuracy: it is never selected.
     */
    readonly gainsOverStrict: boolean;
    /** The tokens/s the choice ranks by: measured, or at one-step verification. */
    readonly rankingTokensPerSecond: number;
}

export interface CalibrationEvaluation {
    readonly setting: CalibrationRow;
    readonly strict: CalibrationRow;
    readonly targetOnly: CalibrationRow;
    readonly accuracyDrop: number;
    readonly withinBudget: boolean;
    readonly speedupOverStrict: number;
    readonly speedupOverTargetOnly: number;
    /** With speed "one-step": the same ratios at one-step verification (a draft-only run on the evaluation split supplies t_D). */
    readonly oneStep?: {readonly speedupOverStrict: number; readonly speedupOverTargetOnly: number};
}

export interface CalibrationResult {
    readonly policy: string;
    readonly speed: CalibrationSpeed;
    readonly parameter: string;
    readonly maxAccuracyDrop: number;
    readonly calibrationItems: readonly string[];
    readonly evaluationItems: readonly string[];
    readonly strict: readonly CalibrationRow[];
    readonly candidates: readonly CalibrationCandidate[];
    /** The fastest candidate within budget that gains over strict SD on the calibration split; null when none is. */
    readonly selected: CalibrationCandidate | null;
    /** The selected setting re-measured on the evaluation split; null when nothing was selected. */
    readonly evaluation: CalibrationEvaluation | null;
    /** The selected policy as a `--policy` value (JSON when it names a memory file, which the compact form cannot). */
    readonly policySpec: string | null;
}

/**
 * Picks a threshold and γ on the calibration split only, then judges the pick on the disjoint
 * evaluation split. The selection step receives just the calibration items, so no evaluation
 * output can influence it; the evaluation split is generated only after the choice is fixed.
 * Every configuration starts from the memory file afresh, so configurations never learn from each
 * other and the evaluation run cannot inherit what the calibration runs memorised.
 */
export async function calibrateSetting(options: CalibrationOptions): Promise<CalibrationResult> {
    assertAccuracyBattery(options.items);
    if (!(options.maxAccuracyDrop >= 0))
        throw new InvalidInputError(`must be a non-negative number of points, got ${options.maxAccuracyDrop}`, "maxAccuracyDrop");
    if (options.gammas.length === 0 || options.gammas.some((gamma) => !Number.isInteger(gamma) || gamma < 1))
        throw new InvalidInputError(`must be positive integers, got ${options.gammas.join(",") || "none"}`, "gammas");
    // Everything a configuration will need is checked before the first one runs.
    assertSameVocabulary(options.target, options.draft, "draft");
    for (const policy of options.grid.policies)
        await resolveCorrectionMemory(
            policy,
            {size: options.target.vocabularySize, identity: options.target.vocabularyIdentity()},
            options.baseDirectory
        );
    const split = splitBattery(options.items, options.calibrationShare, options.seed);
    const speed = options.speed ?? "measured";
    const measure = async (
        items: readonly BatteryItem[],
        policy: PolicyConfig,
        gamma: number | null,
        threshold: number | null,
        label: string,
        model: "target" | "draft" = "target"
    ): Promise<CalibrationRow> => {
        const correctionMemory = await resolveCorrectionMemory(
            policy,
            {size: options.target.vocabularySize, identity: options.target.vocabularyIdentity()},
            options.baseDirectory
        );
        const measurement = await measureConfiguration(
            model === "draft" ? options.draft : options.target,
            gamma == null ? undefined : options.draft,
            items,
            {
                policy,
                gamma: gamma ?? 0,
                sampling: options.sampling,
                draftSampling: options.draftSampling,
                maxTokens: options.maxTokens,
                stop: options.stop,
                seed: options.seed,
                drafter: options.drafter,
                chatTemplate: options.chatTemplate
            },
            {correctionMemory, signal: options.signal, warmUp: true}
        );
        options.onProgress?.(
            `${label}: accuracy ${(100 * measurement.accuracy).toFixed(1)}%, ${measurement.tokensPerSecond.toFixed(1)} tok/s`
        );
        return {...measurement, label, policy: gamma == null ? `${model}-only` : policyLabel(policy), threshold, gamma};
    };
    /** Per-token costs of both models alone on these items, for one-step ranking; null when speed is measured. */
    const stepCosts = async (items: readonly BatteryItem[], phase: string): Promise<StepCosts | null> => {
        if (speed === "measured") return null;
        const targetOnly = await measure(items, {kind: "strict"}, null, null, `${phase}: target-only`);
        const draftOnly = await measure(items, {kind: "strict"}, null, null, `${phase}: draft-only`, "draft");
        const costs = stepCostsOf(targetOnly, draftOnly);
        if (costs == null)
            throw new InvalidInputError("target-only or draft-only produced no tokens, so one-step speeds are undefined", "speed");
        return costs;
    };
    const rankingSpeed = (row: CalibrationRow, costs: StepCosts | null): number => {
        if (costs == null) return row.tokensPerSecond;
        const seconds = oneStepVerificationSeconds(row, costs);
        return seconds > 0 ? row.emittedTokens / seconds : 0;
    };

    options.onPhase?.("calibration");
    const calibrationCosts = await stepCosts(split.calibration, "calibration");
    const strict: CalibrationRow[] = [];
    const candidates: CalibrationCandidate[] = [];
    for (const gamma of options.gammas) {
        const reference = await measure(split.calibration, {kind: "strict"}, gamma, null, `calibration: strict γ=${gamma}`);
        strict.push(reference);
        for (const [index, policy] of options.grid.policies.entries()) {
            const row = await measure(
                split.calibration,
                policy,
                gamma,
                options.grid.thresholds[index],
                `calibration: ${policyLabel(policy)} γ=${gamma}`
            );
            const accuracyDrop = 100 * (reference.accuracy - row.accuracy);
            // A hair of tolerance so a drop equal to the budget is not lost to floating point.
            candidates.push({
                ...row,
                threshold: row.threshold!,
                gamma,
                accuracyDrop,
                withinBudget: accuracyDrop <= options.maxAccuracyDrop + 1e-9,
                gainsOverStrict: row.meanAcceptanceLength > reference.meanAcceptanceLength,
                rankingTokensPerSecond: rankingSpeed(row, calibrationCosts)
            });
        }
    }
    const selected = candidates
        .filter((candidate) => candidate.withinBudget && candidate.gainsOverStrict)
        .reduce<CalibrationCandidate | null>(
            (best, candidate) => (best == null || candidate.rankingTokensPerSecond > best.rankingTokensPerSecond ? candidate : best),
            null
        );
    const base = {
        policy: options.grid.kind,
        speed,
        parameter: options.grid.parameter,
        maxAccuracyDrop: options.maxAccuracyDrop,
        calibrationItems: split.calibration.map((item) => item.id),
        evaluationItems: split.evaluation.map((item) => item.id),
        strict,
        candidates,
        selected
    };
    if (selected == null) return {...base, evaluation: null, policySpec: null};

    options.onPhase?.("evaluation");
    const policy = options.grid.policies[options.grid.thresholds.indexOf(selected.threshold)];
    const setting = await measure(
        split.evaluation,
        policy,
        selected.gamma,
        selected.threshold,
        `evaluation: ${policyLabel(policy)} γ=${selected.gamma}`
    );
    const strictRow = await measure(split.evaluation, {kind: "strict"}, selected.gamma, null, `evaluation: strict γ=${selected.gamma}`);
    const targetOnly = await measure(split.evaluation, {kind: "strict"}, null, null, "evaluation: target-only");
    const accuracyDrop = 100 * (strictRow.accuracy - setting.accuracy);
    const ratio = (fast: number, slow: number) => (slow > 0 ? fast / slow : 0);
    let oneStep: CalibrationEvaluation["oneStep"];
    if (speed === "one-step") {
        const draftOnly = await measure(split.evaluation, {kind: "strict"}, null, null, "evaluation: draft-only", "draft");
        const costs = stepCostsOf(targetOnly, draftOnly);
        if (costs != null)
            oneStep = {
                speedupOverStrict: ratio(rankingSpeed(setting, costs), rankingSpeed(strictRow, costs)),
                speedupOverTargetOnly: ratio(rankingSpeed(setting, costs), targetOnly.tokensPerSecond)
            };
    }
    return {
        ...base,
        policySpec: policy.kind === "calibrated" && policy.memory != null ? JSON.stringify(policy) : policyLabel(policy),
        evaluation: {
            setting,
            strict: strictRow,
            targetOnly,
            accuracyDrop,
            withinBudget: accuracyDrop <= options.maxAccuracyDrop + 1e-9,
            speedupOverStrict: ratio(setting.tokensPerSecond, strictRow.tokensPerSecond),
            speedupOverTargetOnly: ratio(setting.tokensPerSecond, targetOnly.tokensPerSecond),
            ...(oneStep == null ? {} : {oneStep})
        }
    };
}
