import {resolve} from "node:path";
import {Option} from "commander";
import {InvalidInputError} from "../../errors.js";
import type {DistillationContinuations} from "../../fairness/mitigation/buildDistillationSet.js";
import type {MitigationMethod} from "../../fairness/mitigation/fairnessWeightedGradient.js";
import {
    defaultMitigationOptions,
    DISPARATE_IMPACTS_PAPER_MITIGATION,
    type MitigationOptions
} from "../../fairness/mitigation/MitigationState.js";
import {type FairnessRunCliOptions, type FairnessRunSettings, parseFairnessRunOptions} from "../fairnessRunOptions.js";
import {nonNegativeDecimal, nonNegativeInteger, positiveInteger, requiredText} from "../textOptions.js";

/** The --preset value that takes the Disparate Impacts paper's D.1 hyperparameters. */
export const PAPER_PRESET = "disparate-impacts-paper";

/** --method: one mitigation, or both from the same start and seed. */
export type MitigateMethodChoice = MitigationMethod | "both";

/** Raw option values as commander hands them over (its choices() have checked --method, --preset and --continuations). */
export interface FairnessMitigateOptions extends FairnessRunCliOptions {
    readonly evalBattery?: string;
    readonly out?: string;
    readonly method?: MitigateMethodChoice;
    readonly steps?: string;
    readonly batchPerTask?: string;
    readonly gradAccum?: string;
    readonly continuations?: DistillationContinuations;
    readonly preset?: typeof PAPER_PRESET;
    readonly lr?: string;
    readonly warmupSteps?: string;
    readonly groupsPerStep?: string;
    readonly json?: string;
    readonly report?: string;
    /** Folder of the named datasets (default: the shared data); tests point it at fixtures. */
    readonly dataDirectory?: string;
    /** Progress lines (stderr in the CLI); the runner itself writes nothing but its outputs. */
    readonly onProgress?: (line: string) => void;
}

/** The options checked, each bad one an InvalidInputError naming its flag, before any file is read. */
export interface MitigateSettings {
    readonly run: FairnessRunSettings;
    readonly evalBattery: string | undefined;
    readonly continuations: DistillationContinuations;
    /** Each method with the drafter file it writes, in training order. */
    readonly outputs: ReadonlyMap<MitigationMethod, string>;
    readonly training: Omit<MitigationOptions, "method">;
}

export const methodOption = (): Option =>
    new Option(
        "--method <scdf|rebalance|both>",
        "s-CDF; rebalance: plain distillation with every group weighted equally (this tool's baseline: the paper's data balancing varies the share of one language in a bilingual mix); or both from the same start and seed"
    )
        .choices(["scdf", "rebalance", "both"])
        .default("scdf");

export const presetOption = (): Option =>
    new Option(
        `--preset <${PAPER_PRESET}>`,
        "the Disparate Impacts paper's D.1 values and nothing else: 5 groups drawn per step (SAMPLE_LANGS_PER_STEP), mini-batches of 8, " +
            "--grad-accum 4, --lr 1e-4 held constant (D.1 names no schedule: no warm-up, no decay), clip 1, --max-tokens 64, --gamma 5, " +
            '--continuations target-sampled. Left open by the paper: STEPS (printed "10,00": give --steps), how BATCH_PER_LANG=64 prompts ' +
            "map onto 8 x GRAD_ACCUM 4 = 32 per update (32 are drawn), the sampling temperature (1 here), AdamW's betas and weight decay " +
            "(this trainer's). Options given explicitly still win"
    ).choices([PAPER_PRESET]);

export const continuationsOption = (): Option =>
    new Option(
        "--continuations <kind>",
        "what the drafter imitates: reference-or-greedy (default: the item's reference, else the target's greedy output, " +
            "as analyze scores) or target-sampled (Disparate Impacts paper D.1: sampled from the target, temperature 1, references ignored)"
    ).choices(["reference-or-greedy", "target-sampled"]);

/** Flags → settings; the preset replaces the defaults with the paper's D.1 values, and an option given explicitly still wins. */
export function parseMitigateOptions(options: FairnessMitigateOptions): MitigateSettings {
    const preset = options.preset === PAPER_PRESET ? DISPARATE_IMPACTS_PAPER_MITIGATION : null;
    const run = parseFairnessRunOptions(options, {gamma: preset?.gamma ?? 4, maxTokens: preset?.maxTokens ?? 32});
    const out = requiredText(options.out, "--out");
    if (preset !== null && options.steps === undefined)
        throw new InvalidInputError(
            `is required with --preset ${PAPER_PRESET}: the paper's STEPS is printed "10,00" (1,000 or 10,000?), so the preset does not choose`,
            "--steps"
        );
    const training = parseTraining(options, preset, run.seed);
    return {
        run,
        evalBattery: options.evalBattery,
        continuations: options.continuations ?? preset?.continuations ?? "reference-or-greedy",
        outputs: mitigationOutputs(options.method ?? "scdf", out, run),
        training
    };
}

function parseTraining(
    options: FairnessMitigateOptions,
    preset: typeof DISPARATE_IMPACTS_PAPER_MITIGATION | null,
    seed: number
): Omit<MitigationOptions, "method"> {
    const steps = positiveInteger(options.steps, "--steps", defaultMitigationOptions.steps);
    const groupsPerStep =
        options.groupsPerStep === undefined
            ? (preset?.groupsPerStep ?? null)
            : positiveInteger(options.groupsPerStep, "--groups-per-step", 0);
    const batchPerTask = positiveInteger(
        options.batchPerTask,
        "--batch-per-task",
        preset?.batchPerTask ?? defaultMitigationOptions.batchPerTask
    );
    const gradientAccumulation = positiveInteger(
        options.gradAccum,
        "--grad-accum",
        preset?.gradientAccumulation ?? defaultMitigationOptions.gradientAccumulation
    );
    const learningRate = nonNegativeDecimal(options.lr, "--lr", preset?.learningRate ?? defaultMitigationOptions.learningRate);
    if (!(learningRate > 0) || !Number.isFinite(learningRate))
        throw new InvalidInputError(`must be a finite positive number, got ${options.lr}`, "--lr");
    const warmupSteps = nonNegativeInteger(
        options.warmupSteps,
        "--warmup-steps",
        preset?.warmupSteps ?? Math.min(defaultMitigationOptions.warmupSteps, steps - 1)
    );
    return {
        ...defaultMitigationOptions,
        steps,
        batchPerTask,
        gradientAccumulation,
        learningRate,
        warmupSteps,
        minimumLearningRateRatio: preset?.minimumLearningRateRatio ?? defaultMitigationOptions.minimumLearningRateRatio,
        groupsPerStep,
        seed
    };
}

/** --out for one method; with both, the re-balanced drafter beside it. Neither may be the target or the drafter. */
function mitigationOutputs(method: MitigateMethodChoice, out: string, run: FairnessRunSettings): Map<MitigationMethod, string> {
    const methods: MitigationMethod[] = method === "both" ? ["scdf", "rebalance"] : [method];
    const outputs = new Map(methods.map((entry) => [entry, entry === "rebalance" && method === "both" ? rebalancedPath(out) : out]));
    for (const output of outputs.values())
        if (resolve(output) === resolve(run.targetPath) || resolve(output) === resolve(run.draftPath))
            throw new InvalidInputError(
                `${output} would overwrite the ${resolve(output) === resolve(run.targetPath) ? "target" : "drafter"}`,
                "--out"
            );
    return outputs;
}

/** D2.gguf → D2.rebalance.gguf. */
function rebalancedPath(out: string): string {
    return /\.gguf$/i.test(out) ? out.replace(/\.gguf$/i, ".rebalance.gguf") : `${out}.rebalance.gguf`;
}
