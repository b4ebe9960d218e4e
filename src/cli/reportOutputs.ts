import {writeFileAtomic} from "../io/writeFileAtomic.js";
import {checkOutputFile, checkOutputFolder} from "./checkOutputPath.js";
import {jsonText} from "./writeJsonOutput.js";
import {writeOutputFile} from "./writeOutputFile.js";

/** Checks --report, --json and --plots before any work starts (see checkOutputPath.ts). */
export async function checkReportOutputs(options: {
    readonly report?: string;
    readonly json?: string;
    readonly plots?: string;
}): Promise<void> {
    await checkOutputFile(options.report, "--report");
    await checkOutputFile(options.json, "--json");
    await checkOutputFolder(options.plots, "--plots");
}

/**
 * The outputs every report-writing runner shares (canary, fairness, sweep, calibrate), returning
 * what goes to stdout: the Markdown report, or — when --report names a file — the one-line summary;
 * with --json the result is written to that file, or replaces stdout when it is "-" so the output
 * stays parseable. Write failures become errors naming the flag.
 */
export async function writeReportOutputs(
    options: {readonly report?: string; readonly json?: string},
    report: string,
    summary: () => string,
    result: () => unknown
): Promise<string> {
    let stdout = report;
    if (options.report !== undefined) {
        await writeOutputFile(() => writeFileAtomic(options.report!, report), options.report, "--report");
        stdout = summary();
    }
    if (options.json !== undefined) {
        const text = jsonText(result());
        if (options.json === "-") stdout = text;
        else await writeOutputFile(() => writeFileAtomic(options.json!, text), options.json, "--json");
    }
    return stdout;
}
