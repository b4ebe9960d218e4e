import type {ModelBackend} from "../backend/ModelBackend.js";
import type {BatteryItem} from "../batteries/BatteryItem.js";
import {scoreItem} from "../batteries/scorers/scoreItem.js";
import type {SamplingOptions} from "../distributions/SamplingOptions.js";
import {createDrafter} from "../engine/drafters/createDrafter.js";
import type {DrafterSpec} from "../engine/drafters/parseDrafterSpec.js";
import {generate} from "../engine/generate.js";
import {GenerationTelemetry} from "../engine/GenerationTelemetry.js";
import {InvalidInputError} from "../errors.js";
import type {CorrectionMemory} from "../policies/CorrectionMemory.js";
import type {PolicyConfig} from "../policies/policyConfigSchema.js";
import {type ProportionInterval, wilsonInterval} from "../statistics/wilsonInterval.js";
import type {ChatTemplate} from "../chat/ChatTemplate.js";
import {batteryPromptTokens} from "./batteryPromptTokens.js";

export interface ConfigurationSettings {
    readonly policy: PolicyConfig;
    /** Draft tokens per step; 0 (or no draft model) is plain decoding with `target`. */
    readonly gamma: number;
    readonly sampling: SamplingOptions;
    readonly maxTokens: number;
    /** Stop strings: the output is cut before the first (a serving stack's `stop`). */
    readonly stop?: readonly string[];
    /** Item i of the battery runs with seed + i, so every configuration sees the same seeds. */
    readonly seed: number;
    /**
     * What drafts when there is a draft model and γ > 0 (default `model`). One instance serves every
     * item of the configuration, so a suffix cache learns from the items before.
     */
    readonly drafter?: DrafterSpec;
    /** How chat items become prompts: the target GGUF's template, as serve renders chat; absent: the plain text format. */
    readonly chatTemplate?: ChatTemplate;
    /**
     * How a draft model proposes (default "sample": from its own sampler row, which `strict` then
     * verifies with q; "greedy": its argmax, verified as a q-less proposal, as the Fuzzy SD paper drafts).
     */
    readonly draftSampling?: "sample" | "greedy";
}

export interface ItemOutcome {
    readonly id: string;
    readonly pass: boolean;
    readonly tokens: number;
}

/** One configuration over a battery: accuracy with its Wilson CI, speed and acceptance totals. */
export interface ConfigurationMeasurement {
    readonly items: number;
    readonly correct: number;
    readonly accuracy: number;
    readonly interval: ProportionInterval;
    readonly emittedTokens: number;
    readonly decodeSeconds: number;
    readonly tokensPerSecond: number;
    readonly drafts: number;
    readonly draftTokens: number;
    readonly acceptedTokens: number;
    /** Steps that drafted at least k + 1 tokens, per position k. */
    readonly draftedPerPosition: readonly number[];
    /** vLLM's: 1 + accepted / drafts (1 without drafts). */
    readonly meanAcceptanceLength: number;
    /** Accepted / proposed draft tokens. */
    readonly acceptanceRate: number;
    /** Share of emitted tokens that are accepted draft tokens (Fuzzy SD paper's "% M_D tokens"). */
    readonly draftTokenShare: number;
    readonly outcomes: readonly ItemOutcome[];
}

export interface MeasureResources {
    /** The `calibrated` policy's memory, shared by every item of this configuration (online updates accumulate as in serving). */
    readonly correctionMemory?: CorrectionMemory;
    readonly signal?: AbortSignal;
    readonly onItem?: (done: number, total: number) => void;
    /**
     * Generate the first item once, untimed, before measuring: the first evaluations of a freshly
     * loaded model (allocation, kernel selection, JIT) would otherwise be charged to whichever
     * configuration runs first. Uses only the items given, so a split stays a split.
     */
    readonly warmUp?: boolean;
}

/**
 * Runs one configuration over every item and scores each output with the item's scorer (prompts as
 * batteryPromptTokens cuts them). Tokens/s is battery-wide (all output tokens over all decode time),
 * which weights long answers as a serving stack would, rather than averaging per-item rates.
 */
export async function measureConfiguration(
    target: ModelBackend,
    draft: ModelBackend | undefined,
    items: readonly BatteryItem[],
    settings: ConfigurationSettings,
    resources: MeasureResources = {}
): Promise<ConfigurationMeasurement> {
    if (items.length === 0) throw new InvalidInputError("no items to measure", "items");
    // Checked before any work: a budget that leaves no room for a prompt fails on every item.
    batteryPromptTokens(target, draft, items[0], settings.maxTokens, settings.chatTemplate);
    const newDrafter = () => (settings.drafter == null || draft == null ? undefined : createDrafter(settings.drafter, draft));
    const drafter = newDrafter();
    const run = (item: BatteryItem, seed: number, correctionMemory: CorrectionMemory | undefined, warmUp = false) => {
        const prompt = batteryPromptTokens(target, draft, item, settings.maxTokens, settings.chatTemplate);
        return generate(
            target,
            draft,
            prompt,
            {
                policy: settings.policy,
                gamma: draft == null ? 0 : settings.gamma,
                sampling: settings.sampling,
                draftSampling: settings.draftSampling ?? "sample",
                maxTokens: settings.maxTokens,
                stop: settings.stop,
                seed
            },
            {correctionMemory, signal: resources.signal, drafter: warmUp ? newDrafter() : drafter}
        );
    };
    // Without the shared memory (a calibrated warm-up then updates a throwaway empty one) and with a
    // throwaway drafter, so no item is learnt twice.
    if (resources.warmUp === true) await run(items[0], settings.seed, undefined, true);
    const telemetry = new GenerationTelemetry();
    const outcomes: ItemOutcome[] = [];
    let correct = 0;
    let emittedTokens = 0;
    for (const [index, item] of items.entries()) {
        const result = await run(item, settings.seed + index, resources.correctionMemory);
        const pass = scoreItem(item, result.text).pass === true;
        if (pass) correct++;
        emittedTokens += result.tokens.length;
        telemetry.merge(result.telemetry);
        outcomes.push({id: item.id, pass, tokens: result.tokens.length});
        resources.onItem?.(index + 1, items.length);
    }
    const decodeSeconds = (telemetry.time.total - telemetry.time.prompt) / 1000;
    return {
        items: items.length,
        correct,
        accuracy: correct / items.length,
        interval: wilsonInterval(correct, items.length),
        emittedTokens,
        decodeSeconds,
        tokensPerSecond: decodeSeconds > 0 ? emittedTokens / decodeSeconds : 0,
        drafts: telemetry.drafts,
        draftTokens: telemetry.draftTokens,
        acceptedTokens: telemetry.acceptedTokens,
        draftedPerPosition: [...telemetry.draftedPerPosition],
        meanAcceptanceLength: telemetry.meanAcceptanceLength,
        acceptanceRate: telemetry.acceptanceRate,
        draftTokenShare: telemetry.emittedTokens === 0 ? 0 : telemetry.acceptedTokens / telemetry.emittedTokens,
        outcomes
    };
}
