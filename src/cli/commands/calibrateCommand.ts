import {type Command, Option} from "commander";
import type {ModelBackend} from "../../backend/ModelBackend.js";
import {InvalidInputError} from "../../errors.js";
import {
    calibrateFuzzyPaperProcedure,
    FSD_PAPER_PROCEDURE,
    type FsdPaperCalibrationResult
} from "../../tune/calibrateFuzzyPaperProcedure.js";
import {calibrateSetting, type CalibrationPhase, type CalibrationSpeed} from "../../tune/calibrateSetting.js";
import {parseNumberList} from "../../tune/parseNumberList.js";
import {renderCalibrationReport} from "../../tune/renderCalibrationReport.js";
import {renderFsdPaperCalibrationReport} from "../../tune/renderFsdPaperCalibrationReport.js";
import {thresholdGrid} from "../../tune/thresholdGrid.js";
import {nonNegativeDecimal, requiredText} from "../textOptions.js";
import {badInputOutcome, type CommandOutcome, emitOutcome, type OpenModel, openDefaultModel, openModelOn} from "../CommandOutcome.js";
import {checkReportOutputs, writeReportOutputs} from "../reportOutputs.js";
import {ExitCode, exitCodeHelp} from "../exitCodes.js";
import type {ContextSkips} from "../../engine/fitsContext.js";
import {contextJson, contextSkipsLine, mostSkipped, mostSkippedLine, skippedItemsSection} from "../contextSkips.js";
import {
    addGenerationFlags,
    addModelPairFlags,
    type BatteryRunCliOptions,
    type BatteryRunSettings,
    loadRunBattery,
    openRunModels,
    parseBatteryRunOptions
} from "../batteryRunOptions.js";
import {dataDirOption} from "../dataDirOption.js";

/** Raw option values as commander hands them over (its choices() have checked --procedure and --speed). */
export interface CalibrateCommandOptions extends BatteryRunCliOptions {
    readonly maxAccuracyDrop?: string;
    readonly policy?: string;
    readonly thresholds?: string;
    readonly calibrationShare?: string;
    readonly procedure?: "grid" | "fsd-paper";
    readonly speed?: CalibrationSpeed;
    readonly json?: string;
    readonly report?: string;
}

export interface CalibrateHooks {
    readonly progress?: (line: string) => void;
    /** Told when the calibration and evaluation phases start (tests use it to guard the split). */
    readonly phase?: (phase: CalibrationPhase) => void;
}

const COMMAND_NAME = "specgate calibrate";

/** Exit code when the run worked but no setting qualifies: the command's verdict failed. */
export const BUDGET_NOT_MET_EXIT_CODE = ExitCode.verdictFailed;

/**
 * `specgate calibrate` without process side effects beyond reading the battery and models and
 * writing --json and --report. Exit codes: 0 a setting was selected, 1 none meets the budget while accepting more than strict SD,
 * 3 more than half the items skipped (prompt too long for the context),
 * 2 bad input.
 */
export async function runCalibrateCommand(
    options: CalibrateCommandOptions,
    openModel: OpenModel = openDefaultModel,
    hooks: CalibrateHooks = {}
): Promise<CommandOutcome> {
    const opened: ModelBackend[] = [];
    try {
        const paperProcedure = options.procedure === "fsd-paper";
        const settings = parseBatteryRunOptions(options, {temperature: paperProcedure ? 1 : 0});
        const thresholds =
            options.thresholds === undefined
                ? undefined
                : parseNumberList(options.thresholds, "--thresholds", {test: (value) => value >= 0, expected: "non-negative numbers"});
        const run = {options, settings, thresholds, openModel, opened, hooks};
        return await (paperProcedure ? runFsdPaperProcedure(run) : runGridProcedure(run));
    } catch (error) {
        return badInputOutcome(COMMAND_NAME, error);
    } finally {
        for (const model of opened) await model.dispose();
    }
}

/** What either procedure works with; the models it opens go onto `opened`, which the runner disposes. */
interface CalibrationRun {
    readonly options: CalibrateCommandOptions;
    readonly settings: BatteryRunSettings;
    readonly thresholds: readonly number[] | undefined;
    readonly openModel: OpenModel;
    readonly opened: ModelBackend[];
    readonly hooks: CalibrateHooks;
}

/** The grid procedure: the fastest threshold and γ within --max-accuracy-drop, validated on the evaluation split. */
async function runGridProcedure({options, settings, thresholds, openModel, opened, hooks}: CalibrationRun): Promise<CommandOutcome> {
    const maxAccuracyDrop = nonNegativeDecimal(requiredText(options.maxAccuracyDrop, "--max-accuracy-drop"), "--max-accuracy-drop", 1);
    const grid = thresholdGrid(options.policy ?? "fuzzy", thresholds, options.memory);
    const calibrationShare = nonNegativeDecimal(options.calibrationShare, "--calibration-share", 0.5);
    const battery = await loadRunBattery(settings, options);
    await checkReportOutputs(options);

    const {target, draft, chatTemplate, items, skips} = await openRunModels(settings, battery, openModel, opened);
    const result = await calibrateSetting({
        ...settings,
        target,
        draft,
        items,
        grid,
        maxAccuracyDrop,
        calibrationShare,
        speed: options.speed ?? "measured",
        onPhase: hooks.phase,
        onProgress: hooks.progress,
        chatTemplate
    });
    const {targetPath, draftPath, sampling, draftSampling, maxTokens, stop, seed} = settings;
    const report =
        renderCalibrationReport(result, {target: targetPath, draft: draftPath, battery: settings.battery}) + skippedItemsSection(skips);
    const stdout = await writeReportOutputs(
        options,
        report,
        () =>
            summaryLine(
                result.evaluation == null ? null : {spec: result.policySpec!, gamma: result.selected!.gamma, ...result.evaluation},
                maxAccuracyDrop,
                result.candidates.some((candidate) => candidate.withinBudget)
            ),
        () => ({
            target: targetPath,
            draft: draftPath,
            battery: settings.battery,
            sampling,
            draftSampling,
            maxTokens,
            stop,
            seed,
            calibrationShare,
            ...result,
            context: contextJson(skips)
        })
    );
    return calibrateOutcome(stdout, result.selected != null, skips);
}

/**
 * `calibrate --procedure fsd-paper`: the Fuzzy SD paper's App. D procedure for FSD (calibrateFuzzyPaperProcedure), with
 * its defaults where the flags are not given: the reference code's JS (`fuzzy:js-fsd`, the divergence
 * its thresholds are on), its T grid, greedy drafts, and a sampled target at temperature 1 (Fuzzy SD paper
 * samples on rejection without naming a temperature; 1 is Hugging Face's sampling default).
 */
async function runFsdPaperProcedure({options, settings, thresholds, openModel, opened, hooks}: CalibrationRun): Promise<CommandOutcome> {
    checkFsdPaperFlags(options);
    const grid = thresholdGrid(options.policy ?? "fuzzy:js-fsd", thresholds ?? FSD_PAPER_PROCEDURE.thresholds);
    const calibrationShare = nonNegativeDecimal(options.calibrationShare, "--calibration-share", 0.5);
    const {targetPath, draftPath, battery, sampling, maxTokens, stop, seed} = settings;
    await checkReportOutputs(options);
    const {target, draft, chatTemplate, items, skips} = await openRunModels(
        settings,
        await loadRunBattery(settings, options),
        openModel,
        opened
    );
    const result = await calibrateFuzzyPaperProcedure({
        target,
        draft,
        items,
        grid,
        sampling,
        maxTokens,
        stop,
        seed,
        calibrationShare,
        onProgress: hooks.progress,
        chatTemplate
    });
    const report = renderFsdPaperCalibrationReport(result, {target: targetPath, draft: draftPath, battery}) + skippedItemsSection(skips);
    const stdout = await writeReportOutputs(
        options,
        report,
        () => fsdPaperSummaryLine(result),
        () => ({
            procedure: "fsd-paper",
            target: targetPath,
            draft: draftPath,
            battery,
            sampling,
            draftSampling: "greedy",
            maxTokens,
            stop,
            seed,
            calibrationShare,
            ...result,
            context: contextJson(skips)
        })
    );
    return calibrateOutcome(stdout, result.selected != null, skips);
}

/** The paper's procedure sweeps its own lengths and stops on its own rule, with greedy drafts: the grid's flags are refused. */
function checkFsdPaperFlags(options: CalibrateCommandOptions): void {
    for (const [value, flag] of [
        [options.gamma, "--gamma"],
        [options.maxAccuracyDrop, "--max-accuracy-drop"],
        [options.memory, "--memory"],
        [options.drafter, "--drafter"]
    ] as const)
        if (value !== undefined)
            throw new InvalidInputError(
                "does not apply to --procedure fsd-paper (it sweeps L over 5, 10, 15, 20 and stops at 20% of the target–draft accuracy gap)",
                flag
            );
    if (options.draftSampling !== undefined && options.draftSampling !== "greedy")
        throw new InvalidInputError("must be greedy with --procedure fsd-paper (Fuzzy SD paper drafts greedily)", "--draft-sampling");
}

function fsdPaperSummaryLine(result: FsdPaperCalibrationResult): string {
    return result.evaluation == null
        ? `the Fuzzy SD paper's procedure: no stepped threshold stays above the accuracy floor ${(100 * result.accuracyFloor).toFixed(1)}%; keep SD\n`
        : `the Fuzzy SD paper's procedure selected --policy '${result.policySpec}' --gamma ${result.selected!.gamma}: evaluation accuracy ` +
              `${(100 * result.evaluation.setting.accuracy).toFixed(1)}% (SD ${(100 * result.evaluation.strict.accuracy).toFixed(1)}%)\n`;
}

/** Both procedures' ending: the exit code and the skipped items' lines on stderr. */
function calibrateOutcome(stdout: string, selected: boolean, skips: ContextSkips): CommandOutcome {
    return {
        exitCode: calibrateExitCode(selected, skips),
        stdout,
        stderr: contextSkipsLine(COMMAND_NAME, skips) + mostSkippedLine(COMMAND_NAME, skips)
    };
}

/** 3 when more than half the items were skipped (whatever was selected), else 0 selected or 1 none. */
function calibrateExitCode(selected: boolean, skips: ContextSkips): number {
    if (mostSkipped(skips)) return ExitCode.insufficientData;
    return selected ? ExitCode.success : BUDGET_NOT_MET_EXIT_CODE;
}

export function registerCalibrateCommand(program: Command): Command {
    const command = program
        .command("calibrate")
        .description(
            "pick the fastest threshold and γ within an accuracy budget vs strict SD on a calibration split, and validate it on a disjoint evaluation split"
        );
    return addGenerationFlags(addModelPairFlags(command))
        .option("--battery <spec>", "battery with references, e.g. gsm8k@200 or a .jsonl file")
        .addOption(dataDirOption())
        .addOption(procedureOption())
        .option("--max-accuracy-drop <points>", "largest tolerated accuracy loss vs strict SD, in percentage points (grid procedure)")
        .option(
            "--policy <kind>",
            "fuzzy[:DIVERGENCE] (tunes T), calibrated[:FREQUENCY] (tunes τ) or typical (tunes the posterior threshold); " +
                "default fuzzy (textbook JS), fuzzy:js-fsd with --procedure fsd-paper"
        )
        .option(
            "--gamma <list>",
            "draft lengths to try, e.g. 4 or 2,4,8 (default 4: not published by a seed; the Fuzzy SD paper picks from 5, 10, 15, 20, see --procedure fsd-paper)"
        )
        .option("--thresholds <list>", "threshold values to try (default: a range suited to the policy)")
        .option("--calibration-share <s>", "share of each task's items used to choose (the rest only validates)", "0.5")
        .option("--temperature <t>", "sampling temperature; 0 = greedy (default 0; 1 with --procedure fsd-paper)")
        .option("--seed <n>", "salts the split and seeds the runs", "0")
        .option("--memory <memory.json>", "correction memory for --policy calibrated (from `specgate ocm build`)")
        .addOption(speedOption())
        .option("--json <out>", "write every candidate and the evaluation to OUT ('-' for stdout)")
        .option("--report <out.md>", "write the Markdown report to OUT.md (stdout then gets a one-line verdict)")
        .addHelpText(
            "after",
            exitCodeHelp(["success", "verdictFailed", "badInput", "insufficientData"], {
                insufficientData: "more than half the items skipped: prompt too long for the context with --max-tokens",
                success: "a setting was selected",
                verdictFailed: "no setting meets the budget while accepting more tokens per verification than strict SD: keep strict SD"
            })
        )
        .action(async (options: CalibrateCommandOptions) => {
            emitOutcome(
                await runCalibrateCommand(options, openModelOn(options, COMMAND_NAME), {
                    progress: (line) => process.stderr.write(`${COMMAND_NAME}: ${line}\n`)
                })
            );
        });
}

const procedureOption = (): Option =>
    new Option(
        "--procedure <grid|fsd-paper>",
        "grid (default): the fastest threshold and γ within --max-accuracy-drop; fsd-paper: the Fuzzy SD paper's App. D procedure for fuzzy " +
            "(SD's fastest L of 5, 10, 15, 20; the T of 0.1 ... 1.0 that accepts like SD; T stepped by 0.1 with 3 trials each until accuracy falls 20% of the " +
            "target-draft gap; greedy drafts; defaults --policy fuzzy:js-fsd and --temperature 1)"
    ).choices(["grid", "fsd-paper"]);

const speedOption = (): Option =>
    new Option(
        "--speed <measured|one-step>",
        "rank by measured tokens/s, or by tokens/s if verification cost one target step (the GPU regime; for choosing on a CPU)"
    )
        .choices(["measured", "one-step"] satisfies CalibrationSpeed[])
        .default("measured");

function summaryLine(
    selected: {
        spec: string;
        gamma: number;
        accuracyDrop: number;
        withinBudget: boolean;
        speedupOverStrict: number;
        setting: {accuracy: number};
    } | null,
    budget: number,
    anyWithinBudget: boolean
): string {
    if (selected == null && anyWithinBudget)
        return `no setting within the ${budget} pt budget accepts more tokens per verification than strict SD; keep strict SD\n`;
    if (selected == null) return `no setting meets the ${budget} pt budget on the calibration split; keep strict SD\n`;
    return (
        `selected --policy '${selected.spec}' --gamma ${selected.gamma}: evaluation accuracy ${(100 * selected.setting.accuracy).toFixed(1)}%, ` +
        `drop ${selected.accuracyDrop.toFixed(1)} pt (${selected.withinBudget ? "within" : "OVER"} budget), ${selected.speedupOverStrict.toFixed(2)}× strict SD\n`
    );
}
