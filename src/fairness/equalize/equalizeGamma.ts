import type {ModelBackend} from "../../backend/ModelBackend.js";
import type {BatteryItem} from "../../batteries/BatteryItem.js";
import {renderMessagesAsText} from "../../chat/renderMessagesAsText.js";
import type {SamplingOptions} from "../../distributions/SamplingOptions.js";
import {InvalidInputError} from "../../errors.js";
import {inferAcceptance} from "../../speedup/inferAcceptance.js";
import {stratifiedBootstrap} from "../../statistics/stratifiedBootstrap.js";
import type {FairnessAnalysis} from "../FairnessAnalysis.js";
import type {FairnessItemRecord} from "../FairnessItemRecord.js";
import {measureFairnessItem} from "../measureFairnessItem.js";
import {sumRuns} from "../summarizeFairness.js";
import type {EqualizeAnalysis, EqualizedGroup} from "./EqualizeAnalysis.js";
import {measureVerificationCosts} from "./measureVerificationCosts.js";
import {predictGammaSpeedups, type VerificationCosts} from "./predictGammaSpeedups.js";
import {classifyGammaChoice, speedupSpread} from "./speedupSpread.js";

export interface EqualizeOptions {
    readonly target: ModelBackend;
    readonly draft: ModelBackend;
    /** The analysis's items in its round-robin order (one per group per round), each with its group. */
    readonly order: ReadonlyArray<{readonly item: BatteryItem; readonly group: string}>;
    /** The finished analysis at the global γ: α̂ per group and the speed-ups to compare with. */
    readonly analysis: FairnessAnalysis;
    readonly sampling: SamplingOptions;
    /** γ candidates 1..maxGamma (raised to the analysis γ if that is larger); default 8. */
    readonly maxGamma?: number;
    /** A cost curve measured elsewhere; default: measured here on one prompt of each group. */
    readonly costs?: VerificationCosts;
}

/**
 * `--equalize`: per group, the γ that maximises the predicted speed-up S = f_γ(α̂)·t_T(1) /
 * (γ·t_D + t_T(γ+1)), then a re-run of every item at the global γ and at its group's own γ (the
 * analysis's round-robin order and seeds) to measure what the choice buys. Only γ changes and
 * verification stays strict, so each group's output distribution is the target's at every γ:
 * quality is equal by construction.
 */
export async function equalizeGamma(options: EqualizeOptions): Promise<EqualizeAnalysis> {
    const {analysis, sampling} = options;
    const {settings} = analysis;
    const requested = options.maxGamma ?? 8;
    if (!Number.isInteger(requested) || requested < 1 || requested > 64)
        throw new InvalidInputError(`must be an integer in [1, 64], got ${requested}`, "maxGamma");
    // The global γ must be among the candidates, or "at the global γ" could not be predicted.
    const maxGamma = Math.max(requested, settings.gamma);
    const {order} = options;
    // The order's first round holds one prompt of each group.
    const firstRound = order
        .slice(0, analysis.groups.length)
        .map(({item}) => options.target.tokenize(item.prompt ?? renderMessagesAsText(item.messages ?? [])));
    const costs =
        options.costs ??
        (await measureVerificationCosts(options.target, options.draft, {maxGamma, prompts: firstRound, sampling, seed: settings.seed}));

    const predictions = analysis.groups.map((group) => predictGammaSpeedups(group.measured.inferredAlpha, maxGamma, costs));
    const gammaOf = new Map(analysis.groups.map((group, index) => [group.name, predictions[index].bestGamma]));
    // Each item runs at the global γ and at its group's γ in the same pass (which goes first alternates),
    // so before and after share the machine's load instead of comparing two passes minutes apart.
    const atGlobal: FairnessItemRecord[] = [];
    const atOwn: FairnessItemRecord[] = [];
    for (const [index, {item, group}] of order.entries()) {
        const run = async (gamma: number) =>
            (
                await measureFairnessItem(options.target, options.draft, item, group, {
                    gamma,
                    maxTokens: settings.maxTokens,
                    stop: settings.stop,
                    sampling,
                    seed: settings.seed + index,
                    distributionTemperature: settings.distributionTemperature
                })
            ).record;
        if (index % 2 === 0) {
            atGlobal.push(await run(settings.gamma));
            atOwn.push(await run(gammaOf.get(group)!));
        } else {
            atOwn.push(await run(gammaOf.get(group)!));
            atGlobal.push(await run(settings.gamma));
        }
    }

    const groups = analysis.groups.map((group, index): EqualizedGroup => {
        const prediction = predictions[index];
        const gamma = prediction.bestGamma;
        const own = atOwn.filter((record) => record.group === group.name);
        const global = atGlobal.filter((record) => record.group === group.name);
        // Seeds past those summarizeFairness uses (0..2m), so no interval shares its resampling stream.
        const interval = (records: readonly FairnessItemRecord[], offset: number) =>
            stratifiedBootstrap([records], ([drawn]) => pooledSpeedup(drawn), {
                seed: settings.seed + 2 * analysis.groups.length + 1 + offset,
                resamples: settings.resamples,
                confidence: settings.confidence
            });
        const run = sumRuns(own);
        const meanAccepted = run.drafts === 0 ? 0 : run.acceptedTokens / run.drafts;
        return {
            name: group.name,
            inferredAlpha: group.measured.inferredAlpha,
            gamma,
            predictedByGamma: prediction.speedups,
            predicted: {atGlobalGamma: prediction.speedups[settings.gamma - 1], atOwnGamma: prediction.bestSpeedup},
            measured: {
                atGlobalGamma: interval(global, index),
                atOwnGamma: interval(own, analysis.groups.length + index),
                inferredAlphaAtOwnGamma: inferAcceptance(Math.min(gamma, meanAccepted), gamma),
                acceptanceRateAtOwnGamma: run.draftTokens === 0 ? 0 : run.acceptedTokens / run.draftTokens,
                meanAcceptanceLengthAtOwnGamma: 1 + meanAccepted,
                identicalShareAtOwnGamma: own.filter((record) => record.run.identical).length / own.length
            }
        };
    });
    const spreadOf = (speedup: (group: EqualizedGroup) => number) =>
        speedupSpread(groups.map((group) => ({name: group.name, speedup: speedup(group)})));
    return {
        globalGamma: settings.gamma,
        maxGamma,
        costs,
        choice: classifyGammaChoice(
            settings.gamma,
            groups.map((group) => group.gamma)
        ),
        groups,
        spread: {
            predicted: {before: spreadOf((group) => group.predicted.atGlobalGamma), after: spreadOf((group) => group.predicted.atOwnGamma)},
            measured: {
                before: spreadOf((group) => group.measured.atGlobalGamma.estimate),
                after: spreadOf((group) => group.measured.atOwnGamma.estimate)
            }
        }
    };
}

/** Speculative over target-only tokens per second, pooled over the items — the analysis's speed-up. */
function pooledSpeedup(records: readonly FairnessItemRecord[]): number {
    const run = sumRuns(records);
    return run.speculativeTokens / run.speculativeMilliseconds / (run.baselineTokens / run.baselineMilliseconds);
}
