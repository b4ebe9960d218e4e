import type {ModelBackend} from "../backend/ModelBackend.js";
import type {BatteryItem} from "../batteries/BatteryItem.js";
import type {SamplingOptions} from "../distributions/SamplingOptions.js";
import {GenerationTelemetry} from "../engine/GenerationTelemetry.js";
import {InsufficientDataError, InvalidInputError} from "../errors.js";
import {fitsContext} from "../engine/fitsContext.js";
import type {CostCurve} from "../speedup/speedupModel.js";
import type {FairnessAnalysis} from "./FairnessAnalysis.js";
import type {FairnessItemRecord} from "./FairnessItemRecord.js";
import {equalizeGamma} from "./equalize/equalizeGamma.js";
import type {VerificationCosts} from "./equalize/predictGammaSpeedups.js";
import {defaultGrouping, type FairnessGrouping, groupBatteryItems, type ItemGroup} from "./groupBatteryItems.js";
import {fairnessPromptLength, measureFairnessItem} from "./measureFairnessItem.js";
import {summarizeFairness} from "./summarizeFairness.js";

export interface FairnessOptions {
    readonly target: ModelBackend;
    readonly draft: ModelBackend;
    readonly items: readonly BatteryItem[];
    /** Default: language when every item has one, else task. */
    readonly by?: FairnessGrouping;
    readonly gamma?: number;
    readonly maxTokens?: number;
    /** Stop strings of every run; without them outputs run to maxTokens. */
    readonly stop?: readonly string[];
    /** Run sampling; default greedy (temperature 0), where strict verification is exact match. */
    readonly sampling?: SamplingOptions;
    readonly seed?: number;
    readonly resamples?: number;
    readonly confidence?: number;
    readonly onProgress?: (done: number, total: number, id: string) => void;
    /** Also pick a γ per group and re-run each group at it (the `equalize` section); absent: no equalizing. */
    readonly equalize?: {
        /** γ candidates 1..maxGamma; default 8. */
        readonly maxGamma?: number;
        /** A cost curve measured elsewhere (e.g. on the serving machine); default: measured here. */
        readonly costs?: VerificationCosts;
    };
}

/**
 * `specgate fairness analyze`: per group, measured acceptance and speed-up from real runs and the
 * distributional quantities of the Disparate Impacts paper §5–§6 from teacher forcing; across groups, U with its CI,
 * the speed-up spread and the fitness–acceptance rank correlation. Items run round-robin across
 * groups so slow drift in machine load spreads over every group instead of biasing the last one.
 * Items whose prompt does not fit the context with maxTokens generated tokens are skipped and
 * listed in `context.skipped`; when that leaves a group empty there is nothing to compare, an
 * InsufficientDataError.
 */
export async function analyzeFairness(options: FairnessOptions): Promise<FairnessAnalysis> {
    const by = options.by ?? defaultGrouping(options.items);
    const gamma = options.gamma ?? 4;
    const maxTokens = options.maxTokens ?? 32;
    const {groups, context} = withinContext(groupBatteryItems(options.items, by), options, maxTokens);
    const sampling = options.sampling ?? {temperature: 0, topK: 0, topP: 1, minP: 0};
    const seed = options.seed ?? 0;
    if (!Number.isInteger(gamma) || gamma < 1 || gamma > 64)
        throw new InvalidInputError(`must be an integer in [1, 64], got ${gamma}`, "gamma");
    const settings = {
        gamma,
        maxTokens,
        stop: options.stop ?? [],
        temperature: sampling.temperature,
        distributionTemperature: sampling.temperature > 0 ? sampling.temperature : 1,
        seed,
        resamples: options.resamples ?? 2000,
        confidence: options.confidence ?? 0.95
    };

    const order: Array<{item: BatteryItem; group: string}> = [];
    const measured = groups.reduce((sum, group) => sum + group.items.length, 0);
    for (let round = 0; order.length < measured; round++)
        for (const group of groups) if (round < group.items.length) order.push({item: group.items[round], group: group.name});

    // One untimed pass, so loading and first-allocation costs land on no group.
    await measureFairnessItem(options.target, options.draft, order[0].item, order[0].group, {
        gamma,
        maxTokens: Math.min(maxTokens, 4),
        stop: settings.stop,
        sampling,
        seed,
        distributionTemperature: settings.distributionTemperature
    });
    const records: FairnessItemRecord[] = [];
    const baseline = new GenerationTelemetry();
    const speculative = new GenerationTelemetry();
    for (const [index, {item, group}] of order.entries()) {
        const measured = await measureFairnessItem(options.target, options.draft, item, group, {
            gamma,
            maxTokens,
            stop: settings.stop,
            sampling,
            seed: seed + index,
            distributionTemperature: settings.distributionTemperature
        });
        records.push(measured.record);
        baseline.merge(measured.baseline);
        speculative.merge(measured.speculative);
        options.onProgress?.(index + 1, order.length, item.id);
    }
    const analysis = {
        ...summarizeFairness({
            by,
            groupNames: groups.map((group) => group.name),
            records,
            costCurve: pooledCostCurve(baseline, speculative, gamma),
            settings
        }),
        context
    };
    if (options.equalize === undefined) return analysis;
    return {
        ...analysis,
        equalize: await equalizeGamma({...options.equalize, target: options.target, draft: options.draft, order, analysis, sampling})
    };
}

/** The groups with only the items that fit the context, and the context rule's count of the rest. */
function withinContext(
    groups: readonly ItemGroup[],
    options: FairnessOptions,
    maxTokens: number
): {groups: ItemGroup[]; context: FairnessAnalysis["context"]} {
    const size = Math.min(options.target.contextSize, options.draft.contextSize);
    const skipped: {id: string; group: string; promptTokens: number}[] = [];
    const kept = groups.map((group) => ({
        name: group.name,
        items: group.items.filter((item) => {
            const promptTokens = fairnessPromptLength(options.target, item);
            if (fitsContext(promptTokens, maxTokens, size)) return true;
            skipped.push({id: item.id, group: group.name, promptTokens});
            return false;
        })
    }));
    const empty = kept.filter((group) => group.items.length === 0).map((group) => group.name);
    if (empty.length > 0)
        throw new InsufficientDataError(
            `${skipped.length} of ${options.items.length} item(s) do not fit the ${size}-token context with ${maxTokens} generated tokens, ` +
                `leaving no item in ${empty.join(", ")}; use a larger context or fewer generated tokens`,
            "items"
        );
    return {groups: kept, context: {size, skipped}};
}

/** t_T(1) from the target-only runs, t_T(γ+1) and t_D from the speculative ones; null if any is unmeasured. */
function pooledCostCurve(baseline: GenerationTelemetry, speculative: GenerationTelemetry, gamma: number): CostCurve | null {
    const targetTimeOne = baseline.costCurve()[1];
    const targetTimeVerify = speculative.costCurve()[gamma + 1];
    const [draftTotal, draftCount] = speculative.draftEvaluations;
    const draftTime = draftCount === 0 ? undefined : draftTotal / draftCount;
    const times = [targetTimeOne, targetTimeVerify, draftTime];
    if (!times.every((time) => time !== undefined && time > 0 && Number.isFinite(time))) return null;
    return {targetTimeOne, targetTimeVerify, draftTime: draftTime!};
}
