import {dirname, relative} from "node:path";
import type {Command} from "commander";
import type {ModelBackend} from "../../backend/ModelBackend.js";
import {InvalidInputError} from "../../errors.js";
import {analyzeFairness} from "../../fairness/analyzeFairness.js";
import type {FairnessAnalysis} from "../../fairness/FairnessAnalysis.js";
import {gammaServingHints} from "../../fairness/equalize/gammaServingHints.js";
import {loadFairnessBattery} from "../../fairness/loadFairnessBattery.js";
import {renderFairnessReport} from "../../fairness/renderFairnessReport.js";
import {writeFairnessPlots} from "../../fairness/writeFairnessPlots.js";
import {writeFileAtomic} from "../../io/writeFileAtomic.js";
import {samplingFromCli} from "../samplingCliOptions.js";
import type {SamplingOptions} from "../../distributions/SamplingOptions.js";
import {nonNegativeDecimal, nonNegativeInteger} from "../textOptions.js";
import {badInputOutcome, type CommandOutcome, emitOutcome, type OpenModel, openDefaultModel, openModelOn} from "../CommandOutcome.js";
import {gpuLayersOption, gpuOption} from "../backendOption.js";
import {jsonText} from "../writeJsonOutput.js";
import {writeOutputFile} from "../writeOutputFile.js";
import {checkOutputFile} from "../checkOutputPath.js";
import {checkReportOutputs, writeReportOutputs} from "../reportOutputs.js";
import {ExitCode, exitCodeHelp} from "../exitCodes.js";
import {
    byOption,
    type FairnessRunCliOptions,
    type FairnessRunSettings,
    openFairnessModels,
    parseFairnessRunOptions
} from "../fairnessRunOptions.js";
import {registerFairnessMitigateCommand} from "./fairnessMitigateCommand.js";
import {fairnessConclusion} from "../../fairness/fairnessConclusion.js";
import {createProgress} from "../progress.js";
import {contextSizeOption} from "../contextSizeOption.js";
import {contextSkipsLine, mostSkipped, mostSkippedLine} from "../contextSkips.js";
import {dataDirOption} from "../dataDirOption.js";

/** Raw option values as commander hands them over. */
export interface FairnessAnalyzeOptions extends FairnessRunCliOptions {
    readonly temperature?: string;
    readonly json?: string;
    readonly quiet?: boolean;
    readonly plots?: string;
    readonly report?: string;
    /** Write per-group γ serving hints (and add the equalize section) to this JSON file. */
    readonly equalize?: string;
    /** γ candidates 1..N for --equalize (default 8). */
    readonly equalizeMaxGamma?: string;
    /** Folder of the named datasets (default: the shared data); tests point it at fixtures. */
    readonly dataDirectory?: string;
}

const COMMAND_NAME = "specgate fairness analyze";

/** The flags checked (each bad one an InvalidInputError naming its flag), before the battery is read. */
interface AnalyzeSettings {
    readonly run: FairnessRunSettings;
    readonly sampling: SamplingOptions;
    readonly equalizeMaxGamma: number;
}

/**
 * `specgate fairness analyze` without process side effects beyond reading the battery and models
 * and writing --json, --plots and --report. Exit codes: 0 done, 2 bad input, 3 insufficient data
 * (more than half the items, or every item of a group, skipped: prompt too long for the context).
 */
export async function runFairnessAnalyzeCommand(
    options: FairnessAnalyzeOptions,
    loadModel: OpenModel = openDefaultModel
): Promise<CommandOutcome> {
    const opened: ModelBackend[] = [];
    try {
        const settings = parseAnalyzeOptions(options);
        const analysis = await runAnalysis(options, settings, loadModel, opened);
        return await renderAnalysis(options, settings, analysis);
    } catch (error) {
        return badInputOutcome(COMMAND_NAME, error);
    } finally {
        for (const model of opened) await model.dispose();
    }
}

function parseAnalyzeOptions(options: FairnessAnalyzeOptions): AnalyzeSettings {
    const run = parseFairnessRunOptions(options, {gamma: 4, maxTokens: 32});
    const sampling = samplingFromCli({
        temperature: nonNegativeDecimal(options.temperature, "--temperature", 0),
        topK: 0,
        topP: 1,
        minP: 0
    });
    if (options.equalizeMaxGamma !== undefined && options.equalize === undefined)
        throw new InvalidInputError("needs --equalize OUT.json", "--equalize-max-gamma");
    const equalizeMaxGamma = nonNegativeInteger(options.equalizeMaxGamma, "--equalize-max-gamma", 8);
    if (equalizeMaxGamma < 1 || equalizeMaxGamma > 64)
        throw new InvalidInputError(`must be an integer in [1, 64], got ${equalizeMaxGamma}`, "--equalize-max-gamma");
    if (options.equalize === "") throw new InvalidInputError("is required: the hints file to write", "--equalize");
    return {run, sampling, equalizeMaxGamma};
}

/** Loads the battery, checks the outputs, opens the pair (onto `opened`) and analyses it, with progress on stderr. */
async function runAnalysis(
    options: FairnessAnalyzeOptions,
    {run, sampling, equalizeMaxGamma}: AnalyzeSettings,
    loadModel: OpenModel,
    opened: ModelBackend[]
): Promise<FairnessAnalysis> {
    const items = await loadFairnessBattery(run.battery, options.dataDirectory);
    await checkReportOutputs(options);
    await checkOutputFile(options.equalize, "--equalize");

    const {target, draft} = await openFairnessModels(run, loadModel, opened);
    const progress = createProgress({command: COMMAND_NAME, unit: "runs", quiet: options.quiet});
    const analysis = await analyzeFairness({
        onProgress: (done, total, id) => progress.update(done, total, id),
        target,
        draft,
        items,
        by: run.by,
        gamma: run.gamma,
        maxTokens: run.maxTokens,
        stop: run.stop,
        sampling,
        seed: run.seed,
        resamples: run.resamples,
        equalize: options.equalize === undefined ? undefined : {maxGamma: equalizeMaxGamma}
    });
    progress.finish();
    return analysis;
}

/** Writes --equalize, --plots, --report and --json; stdout, the skipped items on stderr and the exit code. */
async function renderAnalysis(
    options: FairnessAnalyzeOptions,
    {run}: AnalyzeSettings,
    analysis: FairnessAnalysis
): Promise<CommandOutcome> {
    const {targetPath, draftPath, battery} = run;
    if (options.equalize !== undefined) {
        const hints = gammaServingHints(analysis, {target: targetPath, draft: draftPath});
        await writeOutputFile(() => writeFileAtomic(options.equalize!, jsonText(hints)), options.equalize, "--equalize");
    }
    const plots = await writePlots(options, analysis);
    const report = renderFairnessReport(analysis, {target: targetPath, draft: draftPath, battery, plots});
    const stdout = await writeReportOutputs(
        options,
        report,
        () => summaryLine(analysis),
        () => ({target: targetPath, draft: draftPath, battery, ...analysis})
    );
    const skips = {
        ids: analysis.context.skipped.map((item) => item.id),
        total: analysis.items.length + analysis.context.skipped.length,
        contextSize: analysis.context.size,
        maxTokens: run.maxTokens
    };
    const stderr =
        contextSkipsLine(COMMAND_NAME, skips) +
        mostSkippedLine(COMMAND_NAME, skips) +
        (plots != null && !plots.textRendered ? `${COMMAND_NAME}: no TrueType font found; the PNGs have no text (the SVGs do)\n` : "");
    return {exitCode: mostSkipped(skips) ? ExitCode.insufficientData : ExitCode.success, stdout, stderr};
}

/** --plots: the PNG/SVG pair, linked from the report relative to where --report is written. */
async function writePlots(
    options: FairnessAnalyzeOptions,
    analysis: FairnessAnalysis
): Promise<{speedup: string; scatter: string; textRendered: boolean} | undefined> {
    if (options.plots === undefined) return undefined;
    const written = await writeOutputFile(() => writeFairnessPlots(analysis, options.plots!), options.plots, "--plots");
    const base = options.report === undefined ? options.plots : relative(dirname(options.report), options.plots) || ".";
    return {speedup: `${base}/speedup.png`, scatter: `${base}/alpha-vs-divergence.png`, textRendered: written.textRendered};
}

export function registerFairnessCommand(program: Command): Command {
    const fairness = program
        .command("fairness")
        .description(
            "per-task and per-language speed-up fairness of a drafter (the disparate speed-up analysis, and its s-CDF mitigation)"
        );
    fairness
        .command("analyze")
        .description("measure acceptance, speed-up, D_T, drafter fitness and unfairness U per group of a battery")
        .option("--target <T.gguf>", "target model")
        .option("--draft <D.gguf>", "draft model")
        .option("--battery <spec>", "battery spec, e.g. mgsm@20 or mgsm:de@50,mgsm:ja@50, or a .jsonl with task/language/reference")
        .addOption(dataDirOption())
        .addOption(byOption())
        .option("--gamma <n>", "draft tokens per step", "4")
        .option("--max-tokens <n>", "tokens generated per item (and reference tokens scored)", "32")
        .option("--stop <text...>", "stop strings of every run, \\n decoded (e.g. '\\n\\n' for the family's document separator)")
        .option("--temperature <t>", "run temperature; 0 = greedy", "0")
        .option("--seed <n>", "seed of the runs (item i uses seed + i) and of the bootstrap", "0")
        .option("--resamples <n>", "bootstrap resamples", "2000")
        .option("--threads <n>", "CPU threads per model evaluation", "1")
        .addOption(gpuOption())
        .addOption(gpuLayersOption())
        .addOption(contextSizeOption())
        .option("--json <out>", "write the full analysis, per-item records included, to OUT ('-' for stdout)")
        .option("--plots <dir>", "write speedup.{svg,png} and alpha-vs-divergence.{svg,png} into DIR")
        .option("--report <out.md>", "write the Markdown report to OUT.md (stdout then gets a one-line summary)")
        .option("--quiet", "no progress on stderr (a bar on a terminal, else a line every 10 s)")
        .option(
            "--equalize <out.json>",
            "pick per group the γ with the best predicted speed-up (strict, so quality is unchanged), re-run each group at it, report the spread before/after and write the group → γ hints to OUT.json"
        )
        .option("--equalize-max-gamma <n>", "γ candidates 1..N for --equalize (default 8)")
        .addHelpText(
            "after",
            exitCodeHelp(["success", "badInput", "insufficientData"], {
                badInput: "bad usage or bad input, a battery with a single group or an unknown language tag included",
                insufficientData:
                    "more than half the items, or every item of a group, skipped: prompt too long for the context with --max-tokens"
            })
        )
        .action(async (options: FairnessAnalyzeOptions) => {
            emitOutcome(await runFairnessAnalyzeCommand(options, openModelOn(options, COMMAND_NAME)));
        });
    registerFairnessMitigateCommand(fairness);
    return fairness;
}

function summaryLine(analysis: FairnessAnalysis): string {
    const {unfairness, speedup} = analysis.across;
    const {equalize} = analysis;
    return (
        `U = ${unfairness.estimate.toFixed(4)} [${unfairness.low.toFixed(4)}, ${unfairness.high.toFixed(4)}] over ${analysis.groups.length} ${analysis.by} groups; ` +
        `speed-up max/min ${speedup.maxMinRatio.toFixed(2)} (fastest ${speedup.fastestGroup}, slowest ${speedup.slowestGroup})` +
        (equalize == null
            ? ""
            : `; equalized γ ${equalize.groups.map((group) => `${group.name} ${group.gamma}`).join(", ")}: ` +
              `measured max/min ${equalize.spread.measured.before.maxMinRatio.toFixed(2)} → ${equalize.spread.measured.after.maxMinRatio.toFixed(2)}`) +
        "\n" +
        // Per group against target-only, items skipped by the context rule, and what that allows one to conclude.
        fairnessConclusion(analysis)
            .map((line) => `${line}\n`)
            .join("")
    );
}
