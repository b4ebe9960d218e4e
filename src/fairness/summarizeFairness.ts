import {InvalidInputError} from "../errors.js";
import {inferAcceptance} from "../speedup/inferAcceptance.js";
import {type CostCurve, speedupFromCostCurve} from "../speedup/speedupModel.js";
import {spearmanCorrelation} from "../statistics/spearmanCorrelation.js";
import {stratifiedBootstrap} from "../statistics/stratifiedBootstrap.js";
import {meanDivergences, mergeDivergenceSums} from "./DivergenceSums.js";
import type {FairnessAnalysis, FairnessGroupResult} from "./FairnessAnalysis.js";
import type {FairnessItemRecord} from "./FairnessItemRecord.js";
import {unfairness} from "./unfairness.js";

export type FairnessSettings = FairnessAnalysis["settings"];

/**
 * Turns per-item records into the per-group and across-group figures. Group means pool positions
 * (D_T = Σ cross-entropy / Σ positions), speed-ups pool tokens and time, and every interval
 * resamples items within their group, so a group's weight never depends on the resample.
 */
export function summarizeFairness(input: {
    readonly by: FairnessAnalysis["by"];
    readonly groupNames: readonly string[];
    readonly records: readonly FairnessItemRecord[];
    readonly costCurve: CostCurve | null;
    readonly settings: FairnessSettings;
}): Omit<FairnessAnalysis, "context"> {
    const {settings} = input;
    const strata = input.groupNames.map((name) => input.records.filter((record) => record.group === name));
    strata.forEach((stratum, index) => {
        if (stratum.length === 0) throw new InvalidInputError(`group "${input.groupNames[index]}" has no items`, "records");
        if (mergeDivergenceSums(stratum.map((record) => record.divergences)).positions === 0)
            throw new InvalidInputError(`group "${input.groupNames[index]}" has no continuation tokens to score`, "records");
    });
    const bootstrapOptions = (offset: number) => ({
        seed: settings.seed + offset,
        resamples: settings.resamples,
        confidence: settings.confidence
    });
    const crossEntropyOf = (records: readonly FairnessItemRecord[]) =>
        meanDivergences(mergeDivergenceSums(records.map((record) => record.divergences))).crossEntropy;

    const groups = strata.map((records, index): FairnessGroupResult => {
        const means = meanDivergences(mergeDivergenceSums(records.map((record) => record.divergences)));
        const run = sumRuns(records);
        const acceptanceRate = run.draftTokens === 0 ? 0 : run.acceptedTokens / run.draftTokens;
        const meanAccepted = run.drafts === 0 ? 0 : run.acceptedTokens / run.drafts;
        const inferredAlpha = inferAcceptance(Math.min(settings.gamma, meanAccepted), settings.gamma);
        return {
            name: input.groupNames[index],
            items: records.length,
            referenceItems: records.filter((record) => record.continuation === "reference").length,
            measured: {
                acceptanceRate,
                inferredAlpha,
                meanAcceptanceLength: run.drafts === 0 ? 1 : 1 + meanAccepted,
                baselineTokensPerSecond: rate(run.baselineTokens, run.baselineMilliseconds),
                speculativeTokensPerSecond: rate(run.speculativeTokens, run.speculativeMilliseconds),
                speedup: stratifiedBootstrap([records], ([drawn]) => speedupOf(drawn), bootstrapOptions(1 + index)),
                costCurveSpeedup: input.costCurve == null ? null : speedupFromCostCurve(inferredAlpha, settings.gamma, input.costCurve),
                seedSpeedup:
                    input.costCurve == null
                        ? null
                        : means.tokensPerStep / (1 + (settings.gamma * input.costCurve.draftTime) / input.costCurve.targetTimeOne),
                identicalShare: records.filter((record) => record.run.identical).length / records.length
            },
            distributions: {
                positions: means.positions,
                alpha: means.alpha,
                argmaxAgreement: means.argmaxAgreement,
                crossEntropy: stratifiedBootstrap(
                    [records],
                    ([drawn]) => crossEntropyOf(drawn),
                    bootstrapOptions(1 + strata.length + index)
                ),
                kl: means.kl,
                tv: means.tv,
                fitness: means.fitness,
                targetMisfit: means.targetMisfit,
                fitnessGap: means.fitness == null ? null : Math.abs(means.alpha - means.fitness)
            }
        };
    });

    const crossEntropies = groups.map((group) => group.distributions.crossEntropy.estimate);
    const speedups = groups.map((group) => group.measured.speedup.estimate);
    const acceptances = groups.map((group) => group.measured.acceptanceRate);
    const byCrossEntropy = [...groups].sort((a, b) => a.distributions.crossEntropy.estimate - b.distributions.crossEntropy.estimate);
    const bySpeedup = [...groups].sort((a, b) => a.measured.speedup.estimate - b.measured.speedup.estimate);
    const fitted = groups.filter((group) => group.distributions.fitness != null);
    const fittedItems = input.records.filter((record) => record.divergences.dataPositions > 0 && record.run.draftTokens > 0);
    return {
        by: input.by,
        settings,
        groups,
        across: {
            unfairness: stratifiedBootstrap(strata, (drawn) => unfairness(drawn.map(crossEntropyOf)), bootstrapOptions(0)),
            minimumCrossEntropy: Math.min(...crossEntropies),
            bestServedGroup: byCrossEntropy[0].name,
            worstServedGroup: byCrossEntropy[byCrossEntropy.length - 1].name,
            speedup: {
                fastestGroup: bySpeedup[bySpeedup.length - 1].name,
                slowestGroup: bySpeedup[0].name,
                maxMinRatio: Math.max(...speedups) / Math.min(...speedups),
                variance: populationVariance(speedups)
            },
            acceptanceVariance: populationVariance(acceptances),
            analyticAlphaVariance: populationVariance(groups.map((group) => group.distributions.alpha)),
            fitnessAlphaSpearman: {
                groups: definedSpearman(
                    fitted.map((group) => group.distributions.fitness!),
                    fitted.map((group) => group.measured.acceptanceRate)
                ),
                items: definedSpearman(
                    fittedItems.map((record) => 1 - record.divergences.draftDataTv / record.divergences.dataPositions),
                    fittedItems.map((record) => record.run.acceptedTokens / record.run.draftTokens)
                )
            },
            divergenceAlphaSpearman: definedSpearman(crossEntropies, acceptances),
            costCurve: input.costCurve
        },
        items: input.records
    };
}

/** The generation counters of `records` summed (token counts, times, drafts), one total for a group or a battery. */
export function sumRuns(records: readonly FairnessItemRecord[]) {
    const total = {
        baselineTokens: 0,
        baselineMilliseconds: 0,
        speculativeTokens: 0,
        speculativeMilliseconds: 0,
        drafts: 0,
        draftTokens: 0,
        acceptedTokens: 0
    };
    for (const {run} of records) for (const key of Object.keys(total) as Array<keyof typeof total>) total[key] += run[key];
    return total;
}

function rate(tokens: number, milliseconds: number): number {
    return milliseconds > 0 ? (tokens * 1000) / milliseconds : NaN;
}

/** Pooled speculative rate over pooled target-only rate, on the same items. */
function speedupOf(records: readonly FairnessItemRecord[]): number {
    const run = sumRuns(records);
    return rate(run.speculativeTokens, run.speculativeMilliseconds) / rate(run.baselineTokens, run.baselineMilliseconds);
}

function populationVariance(values: readonly number[]): number {
    const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
    return values.reduce((sum, value) => sum + (value - mean) ** 2, 0) / values.length;
}

/** ρ, or null where it is undefined (fewer than two points, a constant side, a non-finite value). */
function definedSpearman(x: readonly number[], y: readonly number[]): number | null {
    if (x.length < 2 || ![...x, ...y].every(Number.isFinite)) return null;
    const rho = spearmanCorrelation(x, y);
    return Number.isNaN(rho) ? null : rho;
}
