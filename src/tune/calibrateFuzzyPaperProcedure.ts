import type {ModelBackend} from "../backend/ModelBackend.js";
import type {BatteryItem} from "../batteries/BatteryItem.js";
import type {SamplingOptions} from "../distributions/SamplingOptions.js";
import {InvalidInputError} from "../errors.js";
import {policyLabel} from "../policies/parsePolicySpec.js";
import type {PolicyConfig} from "../policies/policyConfigSchema.js";
import {assertSameVocabulary} from "../backend/assertSameVocabulary.js";
import {assertAccuracyBattery} from "./assertAccuracyBattery.js";
import {type ConfigurationMeasurement, measureConfiguration} from "./measureConfiguration.js";
import {splitBattery} from "./splitBattery.js";
import type {ChatTemplate} from "../chat/ChatTemplate.js";
import type {ThresholdGrid} from "./thresholdGrid.js";

/**
 * The Fuzzy SD paper's calibration procedure (App. D), with its published values: candidate lengths
 * "L = [5, 10, 15, 20]", thresholds "T = [0.1, 0.2, ... 0.9, 1.0]", "3 trials" per threshold,
 * stepping "in increments of 0.1, until benchmark performance has degraded by approximately 20% of
 * the performance difference between M_D and M_T", drafts greedy, the target sampled on rejection.
 * `nearlyAllAccepted` is not published ("accepting close to all candidates"): 0.95 was chosen as
 * "close to all" for moving to the next candidate length.
 */
export const FSD_PAPER_PROCEDURE = {
    candidateLengths: [5, 10, 15, 20],
    thresholds: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
    trials: 3,
    degradationShare: 0.2,
    nearlyAllAccepted: 0.95
} as const;

export interface FsdPaperCalibrationOptions {
    readonly target: ModelBackend;
    readonly draft: ModelBackend;
    readonly items: readonly BatteryItem[];
    /** How chat items become prompts (see ConfigurationSettings.chatTemplate). */
    readonly chatTemplate?: ChatTemplate;
    /** FSD at every threshold of the Fuzzy SD paper's grid (a `fuzzy` grid; the divergence is the caller's). */
    readonly grid: ThresholdGrid;
    /** The target's sampling on rejection; the Fuzzy SD paper samples ("sample-based decoding"). */
    readonly sampling: SamplingOptions;
    readonly maxTokens: number;
    readonly stop?: readonly string[];
    readonly seed: number;
    /** Share of each task's items the procedure runs on; the rest judges its choice. */
    readonly calibrationShare: number;
    readonly signal?: AbortSignal;
    readonly onProgress?: (line: string) => void;
}

export interface FsdPaperRow {
    readonly label: string;
    readonly gamma: number | null;
    readonly threshold: number | null;
    /** Means over the trials. */
    readonly accuracy: number;
    readonly acceptanceRate: number;
    readonly tokensPerSecond: number;
    readonly meanAcceptanceLength: number;
    readonly trials: readonly ConfigurationMeasurement[];
}

export interface FsdPaperCalibrationResult {
    readonly calibrationItems: readonly string[];
    readonly evaluationItems: readonly string[];
    /** SD at each candidate length (one trial each, as the Fuzzy SD paper picks L′ by speed on a small subset). */
    readonly lengths: readonly FsdPaperRow[];
    /** L′: the candidate length at which SD was fastest. */
    readonly sdLength: number;
    readonly targetOnly: FsdPaperRow;
    readonly draftOnly: FsdPaperRow;
    /** acc(M_T) − 0.2·(acc(M_T) − acc(M_D)): stepping stops where accuracy reaches it. */
    readonly accuracyFloor: number;
    /** FSD at every threshold at L′ (one trial), for matching SD's acceptance. */
    readonly acceptanceScan: readonly FsdPaperRow[];
    /** T_SD: the threshold whose acceptance rate is closest to SD's at L′. */
    readonly matchedThreshold: number;
    /** The thresholds stepped from T_SD upwards, 3 trials each, in order, until the floor was reached. */
    readonly steps: readonly FsdPaperRow[];
    /** The last stepped setting whose mean accuracy stayed above the floor; null when T_SD itself is below it. */
    readonly selected: FsdPaperRow | null;
    /** The selected setting, SD at its length and target-only on the evaluation split; null when nothing was selected. */
    readonly evaluation: {readonly setting: FsdPaperRow; readonly strict: FsdPaperRow; readonly targetOnly: FsdPaperRow} | null;
    readonly policySpec: string | null;
}

/**
 * Runs the Fuzzy SD paper's procedure on the calibration split and judges its choice on the disjoint
 * evaluation split: L′ = the fastest SD candidate length; T_SD = the threshold matching SD's
 * acceptance at L′; then T_SD, T_SD + 0.1, … with three trials each until the mean accuracy falls
 * to acc(M_T) − 20% of the M_T–M_D gap, moving L′ to the next candidate length whenever FSD accepts
 * nearly every draft token. Drafts are greedy (Fuzzy SD paper: "using greedy decoding to generate the
 * candidate sequences from M_D").
 */
export async function calibrateFuzzyPaperProcedure(options: FsdPaperCalibrationOptions): Promise<FsdPaperCalibrationResult> {
    assertAccuracyBattery(options.items);
    if (options.grid.kind !== "fuzzy")
        throw new InvalidInputError(`the Fuzzy SD paper's procedure calibrates fuzzy, got "${options.grid.kind}"`, "grid");
    assertSameVocabulary(options.target, options.draft, "draft");
    const split = splitBattery(options.items, options.calibrationShare, options.seed);
    const procedure = FSD_PAPER_PROCEDURE;

    const measure = async (
        items: readonly BatteryItem[],
        policy: PolicyConfig,
        gamma: number | null,
        threshold: number | null,
        label: string,
        trials: number,
        model: "target" | "draft" = "target"
    ): Promise<FsdPaperRow> => {
        const runs: ConfigurationMeasurement[] = [];
        for (let trial = 0; trial < trials; trial++) {
            // Trial t seeds item i with seed + 1000·t + i: the same items, other random draws.
            runs.push(
                await measureConfiguration(
                    model === "draft" ? options.draft : options.target,
                    gamma == null ? undefined : options.draft,
                    items,
                    {
                        policy,
                        gamma: gamma ?? 0,
                        sampling: options.sampling,
                        draftSampling: "greedy",
                        maxTokens: options.maxTokens,
                        stop: options.stop,
                        seed: options.seed + 1000 * trial,
                        chatTemplate: options.chatTemplate
                    },
                    {signal: options.signal, warmUp: trial === 0}
                )
            );
        }
        const mean = (value: (run: ConfigurationMeasurement) => number) => runs.reduce((sum, run) => sum + value(run), 0) / runs.length;
        const row = {
            label,
            gamma,
            threshold,
            trials: runs,
            accuracy: mean((run) => run.accuracy),
            acceptanceRate: mean((run) => run.acceptanceRate),
            tokensPerSecond: mean((run) => run.tokensPerSecond),
            meanAcceptanceLength: mean((run) => run.meanAcceptanceLength)
        };
        options.onProgress?.(
            `${label}: accuracy ${(100 * row.accuracy).toFixed(1)}%, acceptance ${(100 * row.acceptanceRate).toFixed(1)}%, ${row.tokensPerSecond.toFixed(1)} tok/s`
        );
        return row;
    };
    const strict: PolicyConfig = {kind: "strict"};
    const fuzzyAt = (threshold: number): PolicyConfig => {
        const index = options.grid.thresholds.indexOf(threshold);
        if (index < 0) throw new InvalidInputError(`has no threshold ${threshold}`, "thresholds");
        return options.grid.policies[index];
    };
    const items = split.calibration;

    const lengths: FsdPaperRow[] = [];
    for (const gamma of procedure.candidateLengths) lengths.push(await measure(items, strict, gamma, null, `SD L=${gamma}`, 1));
    let lengthIndex = lengths.reduce((best, row, index) => (row.tokensPerSecond > lengths[best].tokensPerSecond ? index : best), 0);
    const sdLength = procedure.candidateLengths[lengthIndex];
    const sd = lengths[lengthIndex];

    const targetOnly = await measure(items, strict, null, null, "target-only", procedure.trials);
    const draftOnly = await measure(items, strict, null, null, "draft-only", procedure.trials, "draft");
    const accuracyFloor = targetOnly.accuracy - procedure.degradationShare * (targetOnly.accuracy - draftOnly.accuracy);

    const acceptanceScan: FsdPaperRow[] = [];
    for (const threshold of options.grid.thresholds)
        acceptanceScan.push(await measure(items, fuzzyAt(threshold), sdLength, threshold, `FSD T=${threshold} L=${sdLength}`, 1));
    const matched = acceptanceScan.reduce((best, row) =>
        Math.abs(row.acceptanceRate - sd.acceptanceRate) < Math.abs(best.acceptanceRate - sd.acceptanceRate) ? row : best
    );
    const matchedThreshold = matched.threshold!;

    const steps: FsdPaperRow[] = [];
    let selected: FsdPaperRow | null = null;
    const ordered = [...options.grid.thresholds].sort((left, right) => left - right).filter((threshold) => threshold >= matchedThreshold);
    // FSD at `threshold` with the current candidate length L′.
    const measureFsd = (threshold: number): Promise<FsdPaperRow> => {
        const length = procedure.candidateLengths[lengthIndex];
        return measure(items, fuzzyAt(threshold), length, threshold, `FSD T=${threshold} L=${length}`, procedure.trials);
    };
    for (const threshold of ordered) {
        let row = await measureFsd(threshold);
        // The Fuzzy SD paper: "we increased L′ to the next highest length ... if we observed that FSD is accepting close to all candidates".
        while (row.acceptanceRate >= procedure.nearlyAllAccepted && lengthIndex < procedure.candidateLengths.length - 1) {
            lengthIndex++;
            row = await measureFsd(threshold);
        }
        steps.push(row);
        if (row.accuracy <= accuracyFloor) break;
        selected = row;
    }
    const base = {
        calibrationItems: items.map((item) => item.id),
        evaluationItems: split.evaluation.map((item) => item.id),
        lengths,
        sdLength,
        targetOnly,
        draftOnly,
        accuracyFloor,
        acceptanceScan,
        matchedThreshold,
        steps,
        selected
    };
    if (selected == null) return {...base, evaluation: null, policySpec: null};

    const policy = fuzzyAt(selected.threshold!);
    const evaluation = {
        setting: await measure(
            split.evaluation,
            policy,
            selected.gamma,
            selected.threshold,
            `evaluation: ${policyLabel(policy)} L=${selected.gamma}`,
            procedure.trials
        ),
        strict: await measure(split.evaluation, strict, selected.gamma, null, `evaluation: SD L=${selected.gamma}`, procedure.trials),
        targetOnly: await measure(split.evaluation, strict, null, null, "evaluation: target-only", procedure.trials)
    };
    return {...base, evaluation, policySpec: policyLabel(policy)};
}
