import {readFile} from "node:fs/promises";

import type {Command} from "commander";
import {stringify} from "yaml";

import {type TaisClassification, DEFAULT_TAIS_OPTIONS, computeTais} from "../../audits/tais/computeTais.js";
import {parseCountsCsv} from "../../audits/tais/parseCountsCsv.js";
import {type TaisCardFormat, buildTaisCard, renderTaisCard} from "../../audits/tais/taisCard.js";
import {runTaisSelfTest} from "../../audits/tais/taisSelfTest.js";
import {temperatureOfCellId} from "../../audits/tais/summarizeTaisSamples.js";
import {InvalidInputError, SpecgateError} from "../../errors.js";
import {writeFileAtomic} from "../../io/writeFileAtomic.js";
import {checkOutputFile} from "../checkOutputPath.js";
import {ExitCode, exitCodeHelp} from "../exitCodes.js";
import {taisParentCommand} from "../textOptions.js";
import {
    addTaisRuleOptions,
    cardCalibration,
    holmPairsHelp,
    formatOption,
    parseTaisOptions,
    TAIS_FAMILY_HELP,
    type TaisScreenCommandOptions
} from "../taisScreenOptions.js";
import {type CommandOutcome, emitOutcome} from "../CommandOutcome.js";

/** Raw option values as commander hands them over; runTaisCompute validates them itself. */
export interface TaisComputeCommandOptions extends TaisScreenCommandOptions {
    readonly input?: string;
    readonly selfTest?: boolean;
}

/** Exit codes of `specgate tais compute`; documented in --help. */
export const TAIS_EXIT_CODES: Readonly<Record<TaisClassification | "bad_input", number>> = {
    equivalent: ExitCode.success,
    "null-consistent": ExitCode.success,
    divergent: ExitCode.verdictFailed,
    bad_input: ExitCode.badInput,
    inconclusive: ExitCode.insufficientData,
    insufficient_data: ExitCode.insufficientData
};

/** The --help paragraph of both TAIS commands. */
export const TAIS_EXIT_CODE_HELP = exitCodeHelp(["success", "verdictFailed", "badInput", "insufficientData"], {
    success: "equivalent (--verdicts paper: null-consistent)",
    verdictFailed: "divergent (or a failed --self-test)",
    insufficientData:
        "inconclusive: neither equivalence nor a difference shown, or nothing tested (--verdicts paper: insufficient data, no task with --min-n on both arms)"
});

const COMMAND_NAME = "specgate tais compute";

/**
 * The whole command without process side effects other than reading --input and writing --json,
 * so tests can run it in-process. Bad input of any kind ends in exit code 2 and one stderr line.
 */
export async function runTaisCompute(options: TaisComputeCommandOptions): Promise<CommandOutcome> {
    try {
        const format = options.format ?? "yaml";
        await checkOutputFile(options.json, "--json");
        if (options.selfTest === true) {
            const report = runTaisSelfTest();
            const jsonWrittenToStdout = await writeJsonResult(options.json, report);
            const stdout = jsonWrittenToStdout ?? render(report, format);
            return {exitCode: report.passed ? 0 : 1, stdout, stderr: ""};
        }
        const taisOptions = parseTaisOptions(options);
        if (options.input === undefined || options.input === "") {
            throw new InvalidInputError("is required (or use --self-test)", "--input");
        }
        const text = await readInput(options.input);
        // Cells named T=<x> (as `tais run --counts` writes them) carry their temperature, so T > 0 cells gate only when recalibrated.
        const cells = parseCountsCsv(text).map((cell) => ({...cell, temperature: temperatureOfCellId(cell.cellId)}));
        const result = computeTais(cells, taisOptions);
        const jsonWrittenToStdout = await writeJsonResult(options.json, result);
        const stdout = jsonWrittenToStdout ?? renderTaisCard(buildTaisCard(result, cardCalibration(options)), format);
        return {exitCode: TAIS_EXIT_CODES[result.overallClassification], stdout, stderr: ""};
    } catch (error) {
        if (error instanceof SpecgateError || isSystemError(error)) {
            const where =
                error instanceof SpecgateError && options.input !== undefined && /^line \d+/.test(error.field ?? "")
                    ? `${options.input}: `
                    : "";
            return {exitCode: TAIS_EXIT_CODES.bad_input, stdout: "", stderr: `${COMMAND_NAME}: ${where}${oneLine(error.message)}\n`};
        }
        throw error;
    }
}

/** Adds `tais compute` to the program, creating the `tais` parent command if no one has yet. */
export function registerTaisComputeCommand(program: Command): Command {
    const tais = taisParentCommand(program);
    const compute = tais
        .command("compute")
        .description("screen target-only vs speculative safety-pass counts per cell and print the TAIS reporting card")
        .option(
            "--input <counts.csv>",
            "CSV with columns cell_id, task, arm (target_only|speculative), n_total, n_safety_pass; " +
                "or paired: cell_id, task, n_pairs, n_both_pass, n_target_only_pass, n_speculative_only_pass"
        )
        .option(
            "--null-cutoff <h>",
            "Cohen's |h| cutoff h*; 0.2 is the conservative choice until 0.1 is independently validated",
            String(DEFAULT_TAIS_OPTIONS.nullCutoff)
        )
        .option(
            "--tost-margin <pp>",
            "TOST equivalence margin in percentage points",
            DEFAULT_TAIS_OPTIONS.tostMarginPercentagePoints.toFixed(1)
        )
        .option(
            "--alpha <alpha>",
            "level of each one-sided test (the interval reported is 1 - 2 alpha)",
            String(DEFAULT_TAIS_OPTIONS.alpha)
        )
        .option("--min-n <n>", "minimum n_total on each arm of every task", String(DEFAULT_TAIS_OPTIONS.minimumN));
    return (
        addTaisRuleOptions(compute)
            .option(
                "--recalibrated-null-cutoff <h>",
                `${TAIS_FAMILY_HELP.recalibratedNullCutoff}; a cell's temperature is read from a cell_id T=<x>`
            )
            .option("--calibration-corpus <text>", TAIS_FAMILY_HELP.calibrationCorpus)
            .option("--calibration-max-h <h>", TAIS_FAMILY_HELP.calibrationMaxH)
            .option("--json <out>", "also write the full JSON result to OUT atomically; '-' prints it to stdout instead of the card")
            .addOption(formatOption())
            .option("--self-test", "run the built-in synthetic cases instead of reading --input")
            .addHelpText(
                "after",
                "\nRows per arm carry no pairing, so equivalence is the unpaired Wald TOST on the two pass rates (the card says so);" +
                    " paired rows (and `tais run`) get the paired exact unconditional score test, McNemar exact beside it."
            )
            .addHelpText("after", holmPairsHelp)
            .addHelpText(
                "after",
                TAIS_EXIT_CODE_HELP + "Over several cells the worst class wins: divergent, then inconclusive, then equivalent."
            )
            // Usage errors (unknown option, bad --format) are thrown as CommanderError instead of
            // exiting 1 (which means "divergent" here); src/cli/main.ts turns them into exit code 2.
            .exitOverride()
            .action(async (options: TaisComputeCommandOptions) => {
                emitOutcome(await runTaisCompute(options));
            })
    );
}

async function readInput(path: string): Promise<string> {
    try {
        return await readFile(path, "utf8");
    } catch (error) {
        throw new InvalidInputError(
            `cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
            "--input"
        );
    }
}

/** Writes the JSON result where --json says; returns the JSON text when it belongs on stdout. */
async function writeJsonResult(destination: string | undefined, value: unknown): Promise<string | undefined> {
    if (destination === undefined) {
        return undefined;
    }
    const json = `${JSON.stringify(value, null, 2)}\n`;
    if (destination === "-") {
        return json;
    }
    try {
        await writeFileAtomic(destination, json);
    } catch (error) {
        throw new InvalidInputError(
            `cannot write ${destination} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
            "--json"
        );
    }
    return undefined;
}

function render(value: unknown, format: TaisCardFormat): string {
    return format === "json" ? `${JSON.stringify(value, null, 2)}\n` : stringify(value, {lineWidth: 0});
}

function isSystemError(error: unknown): error is NodeJS.ErrnoException {
    return error instanceof Error && typeof (error as NodeJS.ErrnoException).code === "string";
}

function oneLine(message: string): string {
    return message.replace(/\s*\n\s*/g, " ");
}
