import {type Command} from "commander";
import {renderCanaryReport} from "../../audits/canary/renderCanaryReport.js";
import {runCanary} from "../../audits/canary/runCanary.js";
import {loadBattery} from "../../batteries/loadBattery.js";
import type {DecodePath} from "../../decodePaths/DecodePath.js";
import {openDecodePath} from "../../decodePaths/openDecodePath.js";
import {decodePathContextWarning} from "../contextSizeOption.js";
import {nonNegativeDecimal, nonNegativeInteger, positiveInteger, requiredText} from "../textOptions.js";
import {ExitCode, exitCodeHelp} from "../exitCodes.js";
import {badInputOutcome, type CommandOutcome, emitOutcome} from "../CommandOutcome.js";
import {checkReportOutputs, writeReportOutputs} from "../reportOutputs.js";
import {createProgress} from "../progress.js";
import {dataDirOption} from "../dataDirOption.js";

/** Raw option values as commander hands them over. */
export interface CanaryCommandOptions {
    readonly a?: string;
    readonly b?: string;
    readonly prompts?: string;
    readonly maxMismatch?: string;
    readonly expectFingerprint?: string;
    readonly expectFingerprintA?: string;
    readonly maxTokens?: string;
    readonly seed?: string;
    readonly concurrency?: string;
    readonly json?: string;
    readonly report?: string;
    readonly quiet?: boolean;
    /** --data-dir: where named batteries in --prompts are read (default: defaultDataDirectory()). */
    readonly dataDirectory?: string;
}

/** How the command turns a spec into a path; tests substitute in-memory paths. */
export type OpenPath = (spec: string) => Promise<DecodePath>;

const COMMAND_NAME = "specgate canary";

/**
 * `specgate canary` without process side effects beyond reading prompts and models and writing
 * --json / --report. Exit codes: 0 pass, 1 drift (mismatch above the bound, or a fingerprint that
 * differs), 2 bad input (a draft whose tokenizer differs from its target's included), 4 could not
 * compare (requests failed, with no drift among the prompts that were compared).
 */
export async function runCanaryCommand(options: CanaryCommandOptions, openPath: OpenPath = openDecodePath): Promise<CommandOutcome> {
    const opened: DecodePath[] = [];
    try {
        const a = requiredText(options.a, "--a");
        const b = requiredText(options.b, "--b");
        const items = await loadBattery(requiredText(options.prompts, "--prompts"), options.dataDirectory);
        const maxMismatch = nonNegativeDecimal(options.maxMismatch, "--max-mismatch", 0.015);
        const maxTokens = positiveInteger(options.maxTokens, "--max-tokens", 64);
        const seed = nonNegativeInteger(options.seed, "--seed", 0);
        const concurrency = nonNegativeInteger(options.concurrency, "--concurrency", 4);
        await checkReportOutputs(options);
        const warnings = decodePathContextWarning(COMMAND_NAME, a) + decodePathContextWarning(COMMAND_NAME, b);
        opened.push(await openPath(a));
        opened.push(await openPath(b));
        const progress = createProgress({command: COMMAND_NAME, unit: "prompts", quiet: options.quiet});
        const result = await runCanary({
            onProgress: (done, total, id) => progress.update(done, total, id),
            a: opened[0],
            b: opened[1],
            items,
            maxMismatch,
            maxTokens,
            seed,
            concurrency: Math.max(1, concurrency),
            expectFingerprint: options.expectFingerprint,
            expectFingerprintA: options.expectFingerprintA
        });
        progress.finish();
        const report = renderCanaryReport(result);
        const stdout = await writeReportOutputs(
            options,
            report,
            () => summaryLine(result),
            () => result
        );
        const exitCode = {
            pass: ExitCode.success,
            drift: ExitCode.verdictFailed,
            "could-not-compare": ExitCode.couldNotCompare,
            "insufficient-data": ExitCode.insufficientData
        }[result.verdict];
        const stderr =
            warnings +
            (result.verdict === "pass" ? "" : `${COMMAND_NAME}: ${verdictNames[result.verdict]}: ${result.failures.join("; ")}\n`);
        return {exitCode, stdout, stderr};
    } catch (error) {
        return badInputOutcome(COMMAND_NAME, error);
    } finally {
        for (const path of opened) await path.dispose();
    }
}

export function registerCanaryCommand(program: Command): Command {
    return program
        .command("canary")
        .description(
            "replay prompts through two decode paths at temperature 0 and alert on drift: exact-match rate, where outputs part, fingerprints"
        )
        .option("--a <path>", "reference decode path spec, e.g. embedded:target=T.gguf (target-only)")
        .option("--b <path>", "decode path under test, e.g. openai:base=http://127.0.0.1:8000/v1,model=m")
        .option(
            "--prompts <file>",
            "prompts: a generic battery .jsonl (id, task, prompt | messages) or a battery spec such as advbench@100"
        )
        .addOption(dataDirOption())
        .option("--max-mismatch <rate>", "fail when the mismatch rate exceeds this", "0.015")
        .option("--expect-fingerprint <hash>", "fail unless path B has this fingerprint (or every reply carries it as system_fingerprint)")
        .option("--expect-fingerprint-a <hash>", "the same check for path A")
        .option("--max-tokens <n>", "tokens per completion", "64")
        .option("--seed <n>", "seed sent with every request", "0")
        .option("--concurrency <n>", "prompts compared at once", "4")
        .option("--json <out>", "write the full JSON result to OUT ('-' for stdout)")
        .option("--report <out.md>", "write the Markdown report to OUT.md (stdout then gets a one-line summary)")
        .option("--quiet", "no progress on stderr (a bar on a terminal, else a line every 10 s)")
        .addHelpText(
            "after",
            exitCodeHelp(["success", "verdictFailed", "badInput", "insufficientData", "couldNotCompare"], {
                success:
                    "pass: the mismatch rate's 95% upper bound (Wilson) is below --max-mismatch and every expected fingerprint matches",
                insufficientData:
                    "too few prompts: no drift seen, but the upper bound is not below --max-mismatch (stderr says how many would do), " +
                    "or more than half the prompts skipped, too long for a path's context with --max-tokens",
                verdictFailed: "drift: the mismatch rate exceeds --max-mismatch, or a fingerprint differs",
                badInput: "bad usage or bad input, a draft whose tokenizer differs from its target's included (nothing was compared)",
                couldNotCompare:
                    "could not compare: requests failed (server down, timeouts) and the prompts that were compared show no drift"
            }) +
                "\nDecode path specs (--a, --b):\n" +
                "  embedded:target=T.gguf[,draft=D.gguf][,policy=strict][,policy.PARAM=V…][,gamma=4][,threads=1][,context=N][,name=N]\n" +
                "  openai:base=URL,model=M[,key-env=VAR][,endpoint=auto|chat|completions][,concurrency=4][,retries=4][,timeout-ms=120000][,name=N]\n" +
                "docs/audits.md lists every key.\n"
        )
        .exitOverride()
        .action(async (options: CanaryCommandOptions) => {
            emitOutcome(await runCanaryCommand(options));
        });
}

const verdictNames = {
    pass: "pass",
    drift: "drift",
    "could-not-compare": "could not compare",
    "insufficient-data": "insufficient data"
} as const;

function summaryLine(result: Awaited<ReturnType<typeof runCanary>>): string {
    return (
        `${{pass: "PASS", drift: "FAIL", "could-not-compare": "COULD NOT COMPARE", "insufficient-data": "INSUFFICIENT DATA"}[result.verdict]}: ` +
        `${result.exactMatches}/${result.compared} exact matches, mismatch ${(100 * result.mismatchRate).toFixed(2)}% ` +
        `(95% upper bound ${(100 * result.mismatchRate95.upper).toFixed(2)}%, threshold ${(100 * result.maxMismatch).toFixed(2)}%), fingerprint B ${result.paths.b.fingerprint}` +
        `${result.skipped.length > 0 ? `, ${new Set(result.skipped.map((entry) => entry.id)).size} prompt(s) skipped: too long for the context with --max-tokens` : ""}\n`
    );
}
