import {join} from "node:path";
import studentTQuantile from "@stdlib/stats-base-dists-t-quantile";
import type {ModelBackend} from "../src/backend/ModelBackend.js";
import type {BatteryItem} from "../src/batteries/BatteryItem.js";
import {renderMessagesAsText} from "../src/chat/renderMessagesAsText.js";
import {stratifiedBootstrap} from "../src/statistics/stratifiedBootstrap.js";

/** What the paired speculation benchmarks (bench/blockVerification.ts, bench/treeBench.ts) share: pairs, batteries, prompts, intervals. */

const root = join(import.meta.dirname, "..");
export const allBatteries = ["advbench", "truthfulqa", "bbq", "csqa", "gsm8k", "mgsm", "humaneval", "family"];
/** `family` stands for the shipped family prompts (8 prompts in the models' own format). */
export const batteryAliases: Record<string, string> = {family: join(root, "examples/family-prompts.jsonl")};
export const modelPairs: Record<string, {target: string; draft: string}> = {
    family: {target: "models/target/model.gguf", draft: "models/draft/model.gguf"},
    surface: {target: "models/target-surface/model.gguf", draft: "models/draft-surface/model.gguf"}
};

export const mean = (values: readonly number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;

export interface Interval {
    readonly estimate: number;
    readonly low: number;
    readonly high: number;
}

/** Mean of paired differences with its 95% Student-t interval. */
export function pairedT(differences: readonly number[]): Interval & {standardError: number; t: number} {
    const n = differences.length;
    const average = mean(differences);
    const variance = differences.reduce((sum, value) => sum + (value - average) ** 2, 0) / (n - 1);
    const standardError = Math.sqrt(variance / n);
    const half = studentTQuantile(0.975, n - 1) * standardError;
    return {
        estimate: average,
        low: average - half,
        high: average + half,
        standardError,
        t: standardError > 0 ? average / standardError : NaN
    };
}

/** Percentile bootstrap (95%) of mean(numerator)/mean(denominator) over paired observations. */
export function bootstrapRatio(numerator: readonly number[], denominator: readonly number[], seed: number, resamples: number): Interval {
    const indices = numerator.map((_value, index) => index);
    const ratio = (chosen: readonly number[]): number =>
        chosen.reduce((sum, index) => sum + numerator[index], 0) / chosen.reduce((sum, index) => sum + denominator[index], 0);
    const interval = stratifiedBootstrap([indices], ([chosen]) => ratio(chosen), {seed, resamples});
    return {estimate: interval.estimate, low: interval.low, high: interval.high};
}

export interface SelectedPrompts {
    readonly items: ReadonlyArray<{id: string; tokens: number[]; cutTokens: number}>;
    readonly distinctItems: number;
    readonly batteryItems: number;
    readonly cutPrompts: number;
}

/**
 * `count` prompts spread evenly over the battery (index ⌊k·L/N⌋, so every variant of a concatenated
 * battery such as mgsm or bbq is represented); a battery with fewer than N items is cycled (prompt k is
 * item k mod L — with seed k, a different sample). Each prompt is cut from the left (the question's end
 * survives, as `specgate fairness` does) so that BOS, the prompt, max-tokens and the pending token fit.
 */
export function selectPrompts(
    items: readonly BatteryItem[],
    target: ModelBackend,
    sizes: {count: number; contextSize: number; maxTokens: number}
): SelectedPrompts {
    const budget = sizes.contextSize - sizes.maxTokens - 2;
    if (budget < 1) throw new Error(`--max-tokens ${sizes.maxTokens} leaves no room for a prompt in a ${sizes.contextSize}-token context`);
    const chosen = Array.from({length: sizes.count}, (_value, k) =>
        items.length >= sizes.count ? items[Math.floor((k * items.length) / sizes.count)] : items[k % items.length]
    );
    const selected = chosen.map((item) => {
        const full = target.tokenize(item.prompt ?? renderMessagesAsText(item.messages ?? []));
        const tokens = full.slice(Math.max(0, full.length - budget));
        return {id: item.id, tokens, cutTokens: full.length - tokens.length};
    });
    return {
        items: selected,
        distinctItems: new Set(selected.map((item) => item.id)).size,
        batteryItems: items.length,
        cutPrompts: selected.filter((item) => item.cutTokens > 0).length
    };
}
