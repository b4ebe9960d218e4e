import {assertSameVocabulary} from "../backend/assertSameVocabulary.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {Option} from "commander";
import type {FairnessGrouping} from "../fairness/groupBatteryItems.js";
import type {ModelPlacement, OpenModel} from "./CommandOutcome.js";
import {stopStrings} from "./stopStrings.js";
import {nonNegativeInteger, positiveInteger, requiredText} from "./textOptions.js";

/** The options `fairness analyze` and `fairness mitigate` share, as commander hands them over. */
export interface FairnessRunCliOptions extends ModelPlacement {
    readonly target?: string;
    readonly draft?: string;
    readonly battery?: string;
    /** Checked by commander (byOption). */
    readonly by?: FairnessGrouping;
    readonly gamma?: string;
    readonly maxTokens?: string;
    readonly stop?: readonly string[];
    readonly seed?: string;
    readonly resamples?: string;
    readonly threads?: string;
}

/** Those options checked (each bad one an InvalidInputError naming its flag), before any model loads. */
export interface FairnessRunSettings {
    readonly targetPath: string;
    readonly draftPath: string;
    readonly battery: string;
    /** Absent: the default grouping of the battery (language where every item has one, else task). */
    readonly by: FairnessGrouping | undefined;
    readonly gamma: number;
    readonly maxTokens: number;
    readonly stop: string[];
    readonly seed: number;
    readonly resamples: number;
    readonly threads: number;
}

/** `--by task|language`, checked by commander; absent, the battery's default grouping. */
export function byOption(): Option {
    return new Option("--by <task|language>", "grouping (default: language when every item has one, else task)").choices([
        "task",
        "language"
    ] satisfies FairnessGrouping[]);
}

/** `defaults`: γ and tokens per item where --gamma and --max-tokens are not given. */
export function parseFairnessRunOptions(options: FairnessRunCliOptions, defaults: {gamma: number; maxTokens: number}): FairnessRunSettings {
    const targetPath = requiredText(options.target, "--target");
    const draftPath = requiredText(options.draft, "--draft");
    const battery = requiredText(options.battery, "--battery");
    return {
        targetPath,
        draftPath,
        battery,
        by: options.by,
        gamma: nonNegativeInteger(options.gamma, "--gamma", defaults.gamma),
        maxTokens: positiveInteger(options.maxTokens, "--max-tokens", defaults.maxTokens),
        stop: stopStrings(options.stop),
        seed: nonNegativeInteger(options.seed, "--seed", 0),
        resamples: positiveInteger(options.resamples, "--resamples", 2000),
        threads: Math.max(1, nonNegativeInteger(options.threads, "--threads", 1))
    };
}

/**
 * Opens the target and the draft (pushed onto `opened`, which the caller disposes whatever happens)
 * and checks that they share one vocabulary (a TokenizerMismatchError naming --draft otherwise).
 */
export async function openFairnessModels(
    settings: FairnessRunSettings,
    openModel: OpenModel,
    opened: ModelBackend[]
): Promise<{target: ModelBackend; draft: ModelBackend}> {
    const target = await openModel(settings.targetPath, settings.threads);
    opened.push(target);
    const draft = await openModel(settings.draftPath, settings.threads);
    opened.push(draft);
    assertSameVocabulary(target, draft, "--draft");
    return {target, draft};
}
