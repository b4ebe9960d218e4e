import {dirname, relative} from "node:path";
import type {Command} from "commander";
import type {ModelBackend} from "../../backend/ModelBackend.js";
import {InvalidInputError} from "../../errors.js";
import {parsePolicyList} from "../../policies/parsePolicyList.js";
import {renderSweepReport} from "../../tune/renderSweepReport.js";
import {runSweep} from "../../tune/runSweep.js";
import type {SweepResult} from "../../tune/SweepResult.js";
import {writeFrontierPlot} from "../../tune/writeFrontierPlot.js";
import {writeOutputFile} from "../writeOutputFile.js";
import {requiredText} from "../textOptions.js";
import {badInputOutcome, type CommandOutcome, emitOutcome, type OpenModel, openDefaultModel, openModelOn} from "../CommandOutcome.js";
import {checkReportOutputs, writeReportOutputs} from "../reportOutputs.js";
import {ExitCode, exitCodeHelp} from "../exitCodes.js";
import {contextJson, contextSkipsLine, mostSkipped, mostSkippedLine, skippedItemsSection} from "../contextSkips.js";
import {
    addGenerationFlags,
    addModelPairFlags,
    type BatteryRunCliOptions,
    loadRunBattery,
    openRunModels,
    parseBatteryRunOptions
} from "../batteryRunOptions.js";
import {dataDirOption} from "../dataDirOption.js";

/** Raw option values as commander hands them over. */
export interface SweepCommandOptions extends BatteryRunCliOptions {
    readonly policies?: string;
    readonly oracle?: boolean;
    readonly json?: string;
    readonly plots?: string;
    readonly report?: string;
}

const COMMAND_NAME = "specgate sweep";

/**
 * `specgate sweep` without process side effects beyond reading the battery and models and writing
 * --json, --plots and --report; `progress` receives a line per finished configuration.
 * Exit codes: 0 done, 2 bad input, 3 more than half the items skipped (prompt too long for the context).
 */
export async function runSweepCommand(
    options: SweepCommandOptions,
    openModel: OpenModel = openDefaultModel,
    progress?: (line: string) => void
): Promise<CommandOutcome> {
    const opened: ModelBackend[] = [];
    try {
        const settings = parseBatteryRunOptions(options);
        const {targetPath, draftPath} = settings;
        const policies = parsePolicyList(requiredText(options.policies, "--policies"), "--policies").map((policy) => {
            return policy.kind === "calibrated" && policy.memory == null && options.memory != null
                ? {...policy, memory: options.memory}
                : policy;
        });
        if (policies.length === 0) throw new InvalidInputError("is empty", "--policies");
        const battery = await loadRunBattery(settings, options);
        await checkReportOutputs(options);

        const {target, draft, chatTemplate, items, skips} = await openRunModels(settings, battery, openModel, opened);
        const result = await runSweep({
            ...settings,
            target,
            draft,
            items,
            policies,
            oracle: options.oracle === true,
            onProgress: progress,
            chatTemplate
        });

        let plot: string | undefined;
        let stderr = contextSkipsLine(COMMAND_NAME, skips) + mostSkippedLine(COMMAND_NAME, skips);
        if (options.plots !== undefined) {
            const written = await writeOutputFile(() => writeFrontierPlot(result, options.plots!), options.plots, "--plots");
            plot = `${options.report === undefined ? options.plots : relative(dirname(options.report), options.plots) || "."}/frontier.png`;
            if (!written.textRendered) stderr += `${COMMAND_NAME}: no TrueType font found; the PNG has no text (the SVG does)\n`;
        }
        const report =
            renderSweepReport(result, {target: targetPath, draft: draftPath, battery: settings.battery, plot}) + skippedItemsSection(skips);
        const stdout = await writeReportOutputs(
            options,
            report,
            () => summaryLine(result),
            () => ({target: targetPath, draft: draftPath, battery: settings.battery, ...result, context: contextJson(skips)})
        );
        return {exitCode: mostSkipped(skips) ? ExitCode.insufficientData : ExitCode.success, stdout, stderr};
    } catch (error) {
        return badInputOutcome(COMMAND_NAME, error);
    } finally {
        for (const model of opened) await model.dispose();
    }
}

export function registerSweepCommand(program: Command): Command {
    const command = program
        .command("sweep")
        .description(
            "accuracy vs speed of verification policies × γ on a scored battery, with baselines and the Pareto frontier (Fuzzy SD's Fig. 2)"
        );
    return addGenerationFlags(addModelPairFlags(command))
        .option("--battery <spec>", "battery with references, e.g. gsm8k@50,csqa@50 or a .jsonl file")
        .addOption(dataDirOption())
        .option(
            "--policies <list>",
            'comma-separated policy specs, compact or JSON, e.g. block,fuzzy:js:0.2,calibrated:6:0.01,{"kind":"fuzzy","threshold":0.4,"topK":50}'
        )
        .option("--gamma <list>", "draft lengths, e.g. 4 or 2,4,8", "4")
        .option("--temperature <t>", "sampling temperature; 0 = greedy", "0")
        .option("--seed <n>", "seed (item i uses seed + i in every configuration)", "0")
        .option("--memory <memory.json>", "correction memory for calibrated policies (from `specgate ocm build`)")
        .option(
            "--oracle",
            "also measure the score-preserving oracle at each γ: an estimate of the mean acceptance length a lossy policy could reach without losing an item (temperature 0)"
        )
        .option("--json <out>", "write every configuration, per-item outcomes included, to OUT ('-' for stdout)")
        .option("--plots <dir>", "write frontier.svg and frontier.png into DIR")
        .option("--report <out.md>", "write the Markdown table to OUT.md (stdout then gets a one-line summary)")
        .addHelpText(
            "after",
            "\nBaselines in the same run: target-only, draft-only, strict SD at each γ, random acceptance at each\n" +
                "fuzzy/calibrated/lossy configuration's acceptance rate, and the random-allocation line.\n" +
                exitCodeHelp(["success", "badInput", "insufficientData"], {
                    insufficientData: "more than half the items skipped: prompt too long for the context with --max-tokens"
                })
        )
        .action(async (options: SweepCommandOptions) => {
            emitOutcome(
                await runSweepCommand(options, openModelOn(options, COMMAND_NAME), (line) =>
                    process.stderr.write(`${COMMAND_NAME}: ${line}\n`)
                )
            );
        });
}

function summaryLine(result: SweepResult): string {
    const frontier = result.points.filter((point) => point.onFrontier).sort((a, b) => b.tokensPerSecond - a.tokensPerSecond);
    return `${result.points.length} configurations on ${result.settings.items} items; frontier: ${frontier.map((point) => `${point.label} (${(100 * point.accuracy).toFixed(1)}%, ${point.tokensPerSecond.toFixed(1)} tok/s)`).join("; ")}\n`;
}
