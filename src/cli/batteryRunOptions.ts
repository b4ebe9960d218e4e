import type {Command} from "commander";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {type BatteryItem} from "../batteries/BatteryItem.js";
import {loadBattery} from "../batteries/loadBattery.js";
import type {ChatTemplate} from "../chat/ChatTemplate.js";
import type {SamplingOptions} from "../distributions/SamplingOptions.js";
import type {DrafterSpec} from "../engine/drafters/parseDrafterSpec.js";
import {parseNumberList} from "../tune/parseNumberList.js";
import {batteryChatTemplate} from "./batteryChatTemplate.js";
import type {ModelPlacement, OpenModel} from "./CommandOutcome.js";
import {gpuLayersOption, gpuOption} from "./backendOption.js";
import {type DraftSampling, draftSamplingOption} from "./draftSamplingOption.js";
import {drafterOptionHelp, resolveCliDrafter} from "./drafterOption.js";
import {samplingFromCli} from "./samplingCliOptions.js";
import {stopStrings} from "./stopStrings.js";
import {nonNegativeDecimal, nonNegativeInteger, positiveInteger, requiredText} from "./textOptions.js";
import {batteryWithinContext} from "../tune/batteryPromptTokens.js";
import type {ContextSkips} from "../engine/fitsContext.js";
import {noItemFits} from "./contextSkips.js";
import {contextSizeOption} from "./contextSizeOption.js";

/** The options sweep and calibrate share, as commander hands them over: a target, a draft and a scored battery. */
export interface BatteryRunCliOptions extends ModelPlacement {
    readonly target?: string;
    readonly draft?: string;
    readonly drafter?: string;
    readonly battery?: string;
    readonly gamma?: string;
    readonly temperature?: string;
    /** Checked by commander (draftSamplingOption). */
    readonly draftSampling?: DraftSampling;
    readonly maxTokens?: string;
    readonly stop?: readonly string[];
    readonly seed?: string;
    readonly threads?: string;
    readonly memory?: string;
    /** Folder of the named datasets (default: the shared data); tests point it at fixtures. */
    readonly dataDirectory?: string;
}

/** Those options checked (each bad one an InvalidInputError naming its flag), before any model loads. */
export interface BatteryRunSettings {
    readonly targetPath: string;
    readonly draftPath: string;
    readonly drafter: DrafterSpec | undefined;
    readonly battery: string;
    readonly gammas: number[];
    readonly maxTokens: number;
    readonly stop: string[];
    readonly sampling: SamplingOptions;
    readonly draftSampling: DraftSampling;
    readonly seed: number;
    readonly threads: number;
}

/** `defaults.temperature`: where --temperature is not given (0, greedy, unless a procedure says otherwise). */
export function parseBatteryRunOptions(
    options: BatteryRunCliOptions,
    defaults: {temperature: number} = {temperature: 0}
): BatteryRunSettings {
    const draftPath = requiredText(options.draft, "--draft");
    return {
        targetPath: requiredText(options.target, "--target"),
        draftPath,
        // The draft model stays required (draft-only is a baseline); --drafter sets what drafts in the speculative configurations.
        drafter: resolveCliDrafter(options.drafter, draftPath, "--drafter", true),
        battery: requiredText(options.battery, "--battery"),
        gammas: parseNumberList(options.gamma ?? "4", "--gamma", {
            test: (value) => Number.isInteger(value) && value >= 1 && value <= 64,
            expected: "integers in [1, 64]"
        }),
        maxTokens: positiveInteger(options.maxTokens, "--max-tokens", 64),
        stop: stopStrings(options.stop),
        sampling: samplingFromCli({
            temperature: nonNegativeDecimal(options.temperature, "--temperature", defaults.temperature),
            topK: 0,
            topP: 1,
            minP: 0
        }),
        draftSampling: options.draftSampling ?? "sample",
        seed: nonNegativeInteger(options.seed, "--seed", 0),
        threads: Math.max(1, nonNegativeInteger(options.threads, "--threads", 1))
    };
}

/** The battery's items. */
export function loadRunBattery(settings: BatteryRunSettings, options: BatteryRunCliOptions): Promise<BatteryItem[]> {
    return loadBattery(settings.battery, options.dataDirectory);
}

/**
 * Opens the target and the draft (pushed onto `opened`, which the caller disposes whatever happens),
 * picks the chat template the battery's conversations are rendered with, and applies the context
 * rule: `items` are those whose prompt fits with --max-tokens, `skips` counts the rest (an
 * InsufficientDataError when none fits).
 */
export async function openRunModels(
    settings: BatteryRunSettings,
    items: readonly BatteryItem[],
    openModel: OpenModel,
    opened: ModelBackend[]
): Promise<{target: ModelBackend; draft: ModelBackend; chatTemplate: ChatTemplate | undefined; items: BatteryItem[]; skips: ContextSkips}> {
    const target = await openModel(settings.targetPath, settings.threads);
    opened.push(target);
    const draft = await openModel(settings.draftPath, settings.threads);
    opened.push(draft);
    const chatTemplate = batteryChatTemplate(target, settings.targetPath, items);
    const {kept, skips} = batteryWithinContext(target, draft, items, settings.maxTokens, chatTemplate);
    if (kept.length === 0 && skips.ids.length > 0) throw noItemFits(skips);
    return {target, draft, chatTemplate, items: kept, skips};
}

/** The flags naming the models: --target, --draft and --drafter. */
export function addModelPairFlags(command: Command): Command {
    return command
        .option("--target <T.gguf>", "target model")
        .option("--draft <D.gguf>", "draft model")
        .option("--drafter <spec>", `what drafts in the speculative configurations: ${drafterOptionHelp.replace(", else none", "")}`);
}

/** The flags of how each item is generated and where the models compute, the same in sweep and calibrate. */
export function addGenerationFlags(command: Command): Command {
    return command
        .addOption(draftSamplingOption())
        .option("--max-tokens <n>", "tokens generated per item", "64")
        .option("--stop <text...>", "stop strings, \\n decoded (e.g. '\\n\\n' for the family's document separator)")
        .option("--threads <n>", "CPU threads per model evaluation", "1")
        .addOption(gpuOption())
        .addOption(gpuLayersOption())
        .addOption(contextSizeOption());
}
