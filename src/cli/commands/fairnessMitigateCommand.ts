import {createHash} from "node:crypto";
import {createReadStream} from "node:fs";
import type {Command} from "commander";
import type {ModelBackend} from "../../backend/ModelBackend.js";
import type {BatteryItem} from "../../batteries/BatteryItem.js";
import {InvalidInputError, TokenizerMismatchError} from "../../errors.js";
import {analyzeFairness, type FairnessOptions} from "../../fairness/analyzeFairness.js";
import type {FairnessAnalysis} from "../../fairness/FairnessAnalysis.js";
import {defaultGrouping, type FairnessGrouping, groupBatteryItems} from "../../fairness/groupBatteryItems.js";
import {loadFairnessBattery} from "../../fairness/loadFairnessBattery.js";
import {buildDistillationSet, type DistillationGroup} from "../../fairness/mitigation/buildDistillationSet.js";
import {compareFairnessAnalyses} from "../../fairness/mitigation/compareFairnessAnalyses.js";
import type {MitigationMethod} from "../../fairness/mitigation/fairnessWeightedGradient.js";
import {mitigateDrafter} from "../../fairness/mitigation/mitigateDrafter.js";
import {defaultMitigationOptions} from "../../fairness/mitigation/MitigationState.js";
import {readTrainableDrafter} from "../../fairness/mitigation/readTrainableDrafter.js";
import {
    meetsTargets,
    type MitigationReport,
    type MitigationRun,
    renderMitigationReport
} from "../../fairness/mitigation/renderMitigationReport.js";
import {badInputOutcome, type CommandOutcome, emitOutcome, type OpenModel, openDefaultModel, openModelOn} from "../CommandOutcome.js";
import {gpuLayersOption, gpuOption} from "../backendOption.js";
import {checkOutputFile} from "../checkOutputPath.js";
import {checkReportOutputs, writeReportOutputs} from "../reportOutputs.js";
import {exitCodeHelp} from "../exitCodes.js";
import {byOption, openFairnessModels} from "../fairnessRunOptions.js";
import {contextSizeOption} from "../contextSizeOption.js";
import {contextSkipsLine} from "../contextSkips.js";
import {dataDirOption} from "../dataDirOption.js";
import {
    continuationsOption,
    type FairnessMitigateOptions,
    methodOption,
    type MitigateSettings,
    parseMitigateOptions,
    presetOption
} from "./fairnessMitigateOptions.js";

const COMMAND_NAME = "specgate fairness mitigate";

/**
 * `specgate fairness mitigate`: corrective drafter fine-tuning (s-CDF, the Disparate Impacts paper Algorithm 1) and/or
 * the re-balancing baseline, then `fairness analyze` of the old and the new drafter with the same
 * frozen target. Writes --out (and, with --method both, the re-balanced drafter beside it), --json
 * and --report. Exit codes: 0 done, 2 bad input.
 */
export async function runFairnessMitigateCommand(
    options: FairnessMitigateOptions,
    loadModel: OpenModel = openDefaultModel
): Promise<CommandOutcome> {
    const opened: ModelBackend[] = [];
    try {
        const settings = parseMitigateOptions(options);
        const progress = options.onProgress ?? (() => undefined);
        const report = await runMitigation({settings, options, loadModel, opened, progress});
        const stdout = await writeReportOutputs(
            options,
            renderMitigationReport(report),
            () => summaryLine(report),
            () => report
        );
        return {exitCode: 0, stdout, stderr: ""};
    } catch (error) {
        return badInputOutcome(COMMAND_NAME, error);
    } finally {
        for (const model of opened) await model.dispose();
    }
}

/** What one mitigation run works with; every model it opens goes onto `opened`, which the caller disposes. */
interface MitigationContext {
    readonly settings: MitigateSettings;
    readonly options: FairnessMitigateOptions;
    readonly loadModel: OpenModel;
    readonly opened: ModelBackend[];
    readonly progress: (line: string) => void;
}

/** The batteries grouped as the analyses group them, checked before any model loads. */
interface MitigationBatteries {
    readonly items: BatteryItem[];
    readonly evaluationItems: BatteryItem[];
    readonly by: FairnessGrouping;
    readonly untrainedTasks: string[];
}

/** Distils, trains each method and analyses the drafter before and after: the report, with no output written. */
async function runMitigation(context: MitigationContext): Promise<MitigationReport> {
    const {settings, options, loadModel, opened} = context;
    const {run} = settings;
    const batteries = await loadMitigationBatteries(context);
    for (const output of settings.outputs.values()) await checkOutputFile(output, "--out");
    await checkReportOutputs(options);
    const targetSha256Before = await sha256OfFile(run.targetPath, "--target");
    const {target, draft} = await openFairnessModels(run, loadModel, opened);
    const groups = await distil(context, batteries, target);
    const analysisOptions = {
        target,
        items: batteries.evaluationItems,
        by: batteries.by,
        gamma: run.gamma,
        maxTokens: run.maxTokens,
        stop: run.stop,
        seed: run.seed,
        resamples: run.resamples
    };
    context.progress(`${COMMAND_NAME}: analysing the drafter before mitigation`);
    const before = await analyzeFairness({...analysisOptions, draft});
    const runs: MitigationRun[] = [];
    for (const [method, outputPath] of settings.outputs)
        runs.push(await mitigateWith(context, {method, outputPath, target, groups, before, analysisOptions}));
    return {
        target: run.targetPath,
        draft: run.draftPath,
        trainingBattery: run.battery,
        evaluationBattery: settings.evalBattery ?? run.battery,
        inSample: settings.evalBattery === undefined || settings.evalBattery === run.battery,
        untrainedTasks: batteries.untrainedTasks,
        by: batteries.by,
        targetSha256Before,
        targetSha256After: await sha256OfFile(run.targetPath, "--target"),
        before,
        runs
    };
}

/** Loads the training and evaluation batteries; every evaluated group must be trained (a warning for untrained tasks). */
async function loadMitigationBatteries({settings, options, progress}: MitigationContext): Promise<MitigationBatteries> {
    const {battery} = settings.run;
    const items = await loadFairnessBattery(battery, options.dataDirectory);
    const evaluationItems =
        settings.evalBattery === undefined ? items : await loadFairnessBattery(settings.evalBattery, options.dataDirectory);
    const by: FairnessGrouping = settings.run.by ?? defaultGrouping(items);
    groupBatteryItems(items, by); // single group, unknown language: fail before anything is loaded
    const evaluationGroups = groupBatteryItems(evaluationItems, by).map((group) => group.name);
    const trainingGroups = groupBatteryItems(items, by).map((group) => group.name);
    const untrained = evaluationGroups.filter((name) => !trainingGroups.includes(name));
    if (untrained.length > 0)
        throw new InvalidInputError(`evaluates ${by} groups the training battery lacks: ${untrained.join(", ")}`, "--eval-battery");

    const trainedTasks = new Set(items.map((item) => item.task));
    const untrainedTasks = [...new Set(evaluationItems.map((item) => item.task))].filter((task) => !trainedTasks.has(task));
    if (untrainedTasks.length > 0)
        progress(
            `${COMMAND_NAME}: warning: the evaluation battery has tasks the training battery lacks (${untrainedTasks.join(", ")}); the drafter will drift on them`
        );
    return {items, evaluationItems, by, untrainedTasks};
}

/** The distillation set: the target's continuations of the training items, grouped; items past the drafter's context are skipped and named. */
async function distil(
    {settings, progress}: MitigationContext,
    {items, by}: MitigationBatteries,
    target: ModelBackend
): Promise<DistillationGroup[]> {
    const {maxTokens, stop, seed, draftPath} = settings.run;
    const drafter = readTrainableDrafter(draftPath, target.vocabularySize);
    progress(`${COMMAND_NAME}: distilling ${items.length} items from the target`);
    const skippedIds: string[] = [];
    const groups = await buildDistillationSet(target, items, {
        by,
        maxTokens,
        stop,
        contextSize: drafter.config.contextLength,
        seed,
        continuations: settings.continuations,
        onSkipped: (id) => skippedIds.push(id)
    });
    if (skippedIds.length > 0)
        progress(
            contextSkipsLine(`${COMMAND_NAME}: distilling`, {
                ids: skippedIds,
                total: items.length,
                contextSize: Math.min(target.contextSize, drafter.config.contextLength),
                maxTokens
            }).trimEnd()
        );
    return groups;
}

/** One method: train from the original drafter into its output file, then analyse the written drafter against the same target. */
async function mitigateWith(
    {settings, loadModel, opened, progress}: MitigationContext,
    step: {
        readonly method: MitigationMethod;
        readonly outputPath: string;
        readonly target: ModelBackend;
        readonly groups: DistillationGroup[];
        readonly before: FairnessAnalysis;
        readonly analysisOptions: Omit<FairnessOptions, "draft">;
    }
): Promise<MitigationRun> {
    const {method, outputPath, target, groups} = step;
    const {steps} = settings.training;
    const training = await mitigateDrafter({
        drafterPath: settings.run.draftPath,
        outputPath,
        targetVocabularySize: target.vocabularySize,
        groups,
        options: {...settings.training, method},
        onStep: (record) => {
            if (record.step === 1 || record.step % 10 === 0 || record.step === steps)
                progress(
                    `${COMMAND_NAME}: ${method} step ${record.step}/${steps}: D̂_T ${record.divergences.map((value, index) => `${groups[record.groups[index]].name} ${value.toFixed(4)}`).join(", ")}, Û ${record.objective.toFixed(5)}`
                );
        }
    });
    progress(`${COMMAND_NAME}: analysing the ${method} drafter`);
    const mitigated = await loadModel(outputPath, settings.run.threads);
    opened.push(mitigated);
    if (mitigated.vocabularyIdentity() !== target.vocabularyIdentity())
        throw new TokenizerMismatchError(`the written drafter ${outputPath} does not tokenize like the target`, "--out");
    const after = await analyzeFairness({...step.analysisOptions, draft: mitigated});
    return {method, training, after, comparison: compareFairnessAnalyses(step.before, after)};
}

export function registerFairnessMitigateCommand(fairness: Command): Command {
    const mitigate = fairness
        .command("mitigate")
        .description(
            "fine-tune the drafter towards equal per-group divergence from the frozen target (s-CDF, Algorithm 1 of The Disparate Impacts of Speculative Decoding) and report U, α_T variance and speed-ups before/after"
        )
        .option("--target <T.gguf>", "target model (frozen: read, never written)")
        .option("--draft <D.gguf>", "drafter to fine-tune (llama architecture; F32, F16 or Q8_0)")
        .option("--battery <spec>", "training battery (the distillation set), e.g. a .jsonl with task/language[/reference]")
        .option("--eval-battery <spec>", "evaluation battery (default: the training battery, reported as in-sample)")
        .addOption(dataDirOption())
        .option("--out <D2.gguf>", "the mitigated drafter (F32); with --method both the re-balanced one goes to D2.rebalance.gguf");
    return addAnalysisOptions(addTrainingOptions(mitigate))
        .option("--json <out>", "write the full report (training trace and both analyses) to OUT ('-' for stdout)")
        .option("--report <out.md>", "write the Markdown report to OUT.md (stdout then gets a one-line summary)")
        .addHelpText(
            "after",
            exitCodeHelp(["success", "badInput"], {
                badInput: "bad usage or bad input, a battery with a single group or an unknown language tag included"
            })
        )
        .action(async (options: FairnessMitigateOptions) => {
            emitOutcome(
                await runFairnessMitigateCommand(
                    {...options, onProgress: (line) => process.stderr.write(`${line}\n`)},
                    openModelOn(options, COMMAND_NAME)
                )
            );
        });
}

/** The trainer's options: method, preset and hyperparameters. */
function addTrainingOptions(command: Command): Command {
    return command
        .addOption(methodOption())
        .addOption(presetOption())
        .option(
            "--steps <n>",
            `optimisation steps (default ${defaultMitigationOptions.steps}: not published in the Disparate Impacts paper, whose STEPS reads "10,00"; chosen to fit a CPU run)`
        )
        .option(
            "--batch-per-task <n>",
            `sequences per group and mini-batch (default ${defaultMitigationOptions.batchPerTask}, the Disparate Impacts paper's B = 8)`
        )
        .option("--groups-per-step <n>", "groups drawn at random for each step (default: every group; D.1: SAMPLE_LANGS_PER_STEP=5)")
        .option(
            "--grad-accum <n>",
            "mini-batches per group averaged into one update (default 1; the Disparate Impacts paper D.1: GRAD_ACCUM=4)"
        )
        .addOption(continuationsOption())
        .option(
            "--lr <rate>",
            `peak AdamW learning rate, linear warm-up then cosine decay to a tenth (default ${defaultMitigationOptions.learningRate}: ` +
                "not published; chosen on the family, where 1e-3 cost the best group 4 points of acceptance; the Disparate Impacts paper D.1 uses 1e-4 with --grad-accum 4)"
        )
        .option(
            "--warmup-steps <n>",
            `warm-up steps (default ${defaultMitigationOptions.warmupSteps}: not published; this trainer's schedule)`
        )
        .option("--seed <n>", "seed of the mini-batches and of the analysis runs", "0");
}

/** The before/after analyses' options and where the models run. */
function addAnalysisOptions(command: Command): Command {
    return command
        .addOption(byOption())
        .option(
            "--gamma <n>",
            "draft tokens per step in the before/after analyses (default 4: not published; the Disparate Impacts paper D.1's estimator uses 5)"
        )
        .option(
            "--max-tokens <n>",
            "continuation tokens per item, distillation and analysis (default 32: not published; fits the family's answers; the Disparate Impacts paper D.1: 64)"
        )
        .option("--stop <text...>", "stop strings of the target's runs, \\n decoded (e.g. '\\n\\n' for the family's document separator)")
        .option("--resamples <n>", "bootstrap resamples of the analyses", "2000")
        .option("--threads <n>", "CPU threads per model evaluation", "1")
        .addOption(gpuOption())
        .addOption(gpuLayersOption())
        .addOption(contextSizeOption());
}

/** Read afresh every time (no cache): the before/after pair is the proof that the target was not written. */
async function sha256OfFile(path: string, flag: string): Promise<string> {
    try {
        const hash = createHash("sha256");
        for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
        return hash.digest("hex");
    } catch (error) {
        throw new InvalidInputError(`cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`, flag);
    }
}

function summaryLine(report: MitigationReport): string {
    const parts = report.runs.map((run) => {
        const {unfairness, acceptanceVariance, bestGroup} = run.comparison;
        const percent = (value: number | null) => (value === null ? "–" : `${value >= 0 ? "+" : ""}${value.toFixed(1)}%`);
        return (
            `${run.method}: U ${unfairness.before.toFixed(4)} → ${unfairness.after.toFixed(4)} (${percent(unfairness.percentChange)}), ` +
            `var α_T ${percent(acceptanceVariance.percentChange)}, best ${bestGroup.name} ${bestGroup.alphaChangePoints >= 0 ? "+" : ""}${bestGroup.alphaChangePoints.toFixed(2)} pt, ` +
            `target outputs ${run.comparison.targetOutputsIdentical ? "identical" : "CHANGED"}, targets ${meetsTargets(run.comparison, report.targetSha256Before === report.targetSha256After) ? "met" : "not met"}`
        );
    });
    return `${parts.join("; ")}${report.inSample ? " (in-sample evaluation)" : ""}\n`;
}
