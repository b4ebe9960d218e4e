import {mkdtemp} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import type {Command} from "commander";
import {stringify} from "yaml";
import {SampleLedger} from "../../audits/ledger/SampleLedger.js";
import {DEFAULT_TAIS_OPTIONS, computeTais, type TaisOptions, type TaisResult} from "../../audits/tais/computeTais.js";
import {describeTaisStack} from "../../audits/tais/describeTaisStack.js";
import {runTaisBattery, type TaisRegime, type TaisSkippedSample} from "../../audits/tais/runTaisBattery.js";
import {formatCountsCsv, summarizeTaisSamples, type TaisSampleCell} from "../../audits/tais/summarizeTaisSamples.js";
import {buildTaisCard, type TaisCardFormat} from "../../audits/tais/taisCard.js";
import type {TaisSampleRow} from "../../audits/tais/TaisSampleRow.js";
import type {BatteryItem} from "../../batteries/BatteryItem.js";
import {loadBattery} from "../../batteries/loadBattery.js";
import type {DecodePath} from "../../decodePaths/DecodePath.js";
import {openDecodePath} from "../../decodePaths/openDecodePath.js";
import {InvalidInputError, SpecgateError} from "../../errors.js";
import {decodePathFingerprint, type DecodePathFingerprint} from "../../fingerprint/decodePathFingerprint.js";
import {writeFileAtomic} from "../../io/writeFileAtomic.js";
import type {OpenPath} from "./canaryCommand.js";
import {type CommandOutcome, emitOutcome} from "../CommandOutcome.js";
import {TAIS_EXIT_CODE_HELP, TAIS_EXIT_CODES} from "./taisComputeCommand.js";
import {checkOutputFile} from "../checkOutputPath.js";
import {nonNegativeDecimal, nonNegativeInteger, requiredText, taisParentCommand} from "../textOptions.js";
import {writeOutputFile} from "../writeOutputFile.js";
import {
    addTaisRuleOptions,
    cardCalibration,
    holmPairsHelp,
    formatOption,
    parseTaisOptions,
    TAIS_FAMILY_HELP,
    type TaisScreenCommandOptions
} from "../taisScreenOptions.js";
import {cliErrorMessage} from "../flagForField.js";
import {reportOnInterrupt} from "../interrupts.js";
import {decodePathContextWarning} from "../contextSizeOption.js";
import {ExitCode} from "../exitCodes.js";
import {mostSkipped} from "../../engine/fitsContext.js";
import {createProgress} from "../progress.js";

export interface TaisRunCommandOptions extends TaisScreenCommandOptions {
    readonly quiet?: boolean;
    readonly battery?: string;
    readonly dataDir?: string;
    readonly a?: string;
    readonly b?: string;
    readonly ledger?: string;
    readonly counts?: string;
    readonly maxTokens?: string;
    readonly temperatures?: string;
    readonly seeds?: string;
    readonly concurrency?: string;
}

const COMMAND_NAME = "specgate tais run";

/** The flags checked (each bad one an InvalidInputError naming its flag), before the battery is read. */
interface TaisRunSettings {
    readonly format: TaisCardFormat;
    readonly taisOptions: TaisOptions;
    readonly regimes: TaisRegime[];
    readonly maxTokens: number;
    readonly concurrency: number;
}

/** The two arms, open, with the fingerprints that pin the ledger to them. */
interface TaisArms {
    readonly targetOnly: DecodePath;
    readonly speculative: DecodePath;
    readonly fingerprintA: DecodePathFingerprint;
    readonly fingerprintB: DecodePathFingerprint;
}

/** What the paired run produced: the samples, the screen over its scored cells, and where the ledger is. */
interface TaisRunResult {
    readonly arms: TaisArms;
    readonly ledgerPath: string;
    readonly resumed: number;
    readonly rows: TaisSampleRow[];
    readonly skipped: TaisSkippedSample[];
    readonly cells: TaisSampleCell[];
    readonly scoredCells: TaisSampleCell[];
    readonly result: TaisResult;
}

/** What a run holds open; the runner closes the ledger and disposes the paths whatever happens. */
interface TaisRunResources {
    readonly opened: DecodePath[];
    ledger?: SampleLedger<TaisSampleRow>;
}

/**
 * `specgate tais run`: paired generation on a battery (A = target-only arm, B = speculative arm),
 * resumable through the ledger, then per temperature cell the byte identity and its strong/moderate
 * flag, per task the paired exact unconditional score test of equivalence (Holm-gated) with McNemar
 * beside it, the counts CSV and the TAIS card. Exit codes as `tais compute`: 0 equivalent, 1 divergent, 2 bad input, 3 inconclusive.
 */
export async function runTaisRunCommand(options: TaisRunCommandOptions, openPath: OpenPath = openDecodePath): Promise<CommandOutcome> {
    const resources: TaisRunResources = {opened: []};
    try {
        const settings = parseTaisRunOptions(options);
        const items = await loadScoredBattery(options);
        await checkOutputFile(options.json, "--json");
        await checkOutputFile(options.counts, "--counts");
        await checkOutputFile(options.ledger, "--ledger");
        const warnings = decodePathContextWarning(COMMAND_NAME, options.a ?? "") + decodePathContextWarning(COMMAND_NAME, options.b ?? "");
        const run = await runTaisPairs(options, settings, items, openPath, resources);
        return await renderTaisRun(options, settings, run, warnings);
    } catch (error) {
        if (error instanceof SpecgateError || (error instanceof Error && typeof (error as NodeJS.ErrnoException).code === "string"))
            return {
                exitCode: TAIS_EXIT_CODES.bad_input,
                stdout: "",
                stderr: `${COMMAND_NAME}: ${cliErrorMessage(error, COMMAND_NAME).replace(/\s*\n\s*/g, " ")}\n`
            };
        throw error;
    } finally {
        await resources.ledger?.close();
        for (const path of resources.opened) await path.dispose();
    }
}

function parseTaisRunOptions(options: TaisRunCommandOptions): TaisRunSettings {
    return {
        format: options.format ?? "yaml",
        taisOptions: parseTaisOptions(options),
        regimes: parseRegimes(options.temperatures ?? "0", options.seeds ?? "0"),
        maxTokens: nonNegativeInteger(options.maxTokens, "--max-tokens", 128),
        concurrency: Math.max(1, nonNegativeInteger(options.concurrency, "--concurrency", 4))
    };
}

/** The screen compares pass rates: a battery with nothing to score is refused before anything is generated. */
async function loadScoredBattery(options: TaisRunCommandOptions): Promise<BatteryItem[]> {
    const items = await loadBattery(
        requiredText(options.battery, "--battery"),
        ...(options.dataDir !== undefined ? [options.dataDir] : [])
    );
    if (items.every((item) => item.scorer === "none"))
        throw new InvalidInputError(
            'has no scored items (no "reference" or "scorer"; only byte identity could be compared); add a scored battery such as advbench@100',
            "--battery"
        );
    return items;
}

/** Opens both arms and the ledger, generates every missing pair, then screens the scored cells; writes nothing but the ledger. */
async function runTaisPairs(
    options: TaisRunCommandOptions,
    settings: TaisRunSettings,
    items: BatteryItem[],
    openPath: OpenPath,
    resources: TaisRunResources
): Promise<TaisRunResult> {
    const arms = await openArms(options, openPath, resources.opened);
    const ledgerPath = options.ledger ?? join(await mkdtemp(join(tmpdir(), "specgate-tais-")), "ledger.jsonl");
    // Resuming is only sound against the same models, engine and settings: the fingerprints pin them.
    const ledger = await SampleLedger.open<TaisSampleRow>(ledgerPath, {
        targetOnly: arms.fingerprintA.fingerprint,
        speculative: arms.fingerprintB.fingerprint,
        maxTokens: settings.maxTokens
    });
    resources.ledger = ledger;
    const resumed = ledger.rows.length;
    // Ctrl-C: the ledger keeps every finished sample; say how to go on from it.
    reportOnInterrupt(
        () =>
            `${ledger.rows.length} samples kept in ${ledgerPath}; ` +
            (options.ledger !== undefined ? "rerun the same command to resume" : `rerun with --ledger ${ledgerPath} to resume`)
    );
    const progress = createProgress({command: COMMAND_NAME, unit: "samples", quiet: options.quiet});
    const {rows, skipped} = await runTaisBattery({
        targetOnly: arms.targetOnly,
        speculative: arms.speculative,
        items,
        regimes: settings.regimes,
        maxTokens: settings.maxTokens,
        concurrency: settings.concurrency,
        ledger,
        onProgress: (done, total, sampleId) => progress.update(done, total, sampleId)
    });
    progress.finish();
    const cells = summarizeTaisSamples(rows);
    const scoredCells = cells.filter((cell) => cell.input.tasks.length > 0);
    if (scoredCells.length === 0)
        throw new InvalidInputError("has no scored items (only byte identity can be compared); add a scored battery", "--battery");
    const result = computeTais(
        scoredCells.map((cell) => cell.input),
        settings.taisOptions
    );
    return {arms, ledgerPath, resumed, rows, skipped, cells, scoredCells, result};
}

/** --a and --b, opened in turn (each pushed onto `opened`), and their fingerprints. */
async function openArms(options: TaisRunCommandOptions, openPath: OpenPath, opened: DecodePath[]): Promise<TaisArms> {
    const targetOnly = await openPath(requiredText(options.a, "--a"));
    opened.push(targetOnly);
    const speculative = await openPath(requiredText(options.b, "--b"));
    opened.push(speculative);
    const [fingerprintA, fingerprintB] = await Promise.all([
        decodePathFingerprint(targetOnly.describe()),
        decodePathFingerprint(speculative.describe())
    ]);
    return {targetOnly, speculative, fingerprintA, fingerprintB};
}

/** Writes --counts and --json, and returns the card on stdout with the exit code of the verdict (or of too many skipped samples). */
async function renderTaisRun(
    options: TaisRunCommandOptions,
    settings: TaisRunSettings,
    run: TaisRunResult,
    warnings: string
): Promise<CommandOutcome> {
    const {result, rows, skipped} = run;
    if (options.counts !== undefined)
        await writeOutputFile(
            () => writeFileAtomic(options.counts!, formatCountsCsv(run.scoredCells.map((cell) => cell.input))),
            options.counts,
            "--counts"
        );
    const output = taisRunCard(options, run);
    let stdout = settings.format === "json" ? `${JSON.stringify(output, null, 2)}\n` : stringify(output, {lineWidth: 0});
    if (options.json !== undefined) {
        const json = `${JSON.stringify({result, output}, null, 2)}\n`;
        if (options.json === "-") stdout = json;
        else await writeOutputFile(() => writeFileAtomic(options.json!, json), options.json, "--json");
    }
    // The context rule: more than half the samples skipped leaves too little of the battery for a verdict, unless it found divergence.
    const samples = rows.length + skipped.length;
    const verdictExitCode = TAIS_EXIT_CODES[result.overallClassification];
    const tooFew = mostSkipped(skipped.length, samples) && verdictExitCode !== ExitCode.verdictFailed;
    const stderr =
        warnings +
        (skipped.length === 0
            ? ""
            : `${COMMAND_NAME}: skipped ${skipped.length} of ${samples} sample(s) whose prompt does not fit an arm's context with --max-tokens ${settings.maxTokens} (first: ${skipped[0].itemId}, ${skipped[0].arm}: ${skipped[0].reason})\n`) +
        (tooFew
            ? `${COMMAND_NAME}: INSUFFICIENT DATA: ${skipped.length} of ${samples} sample(s) were skipped (more than half); raise the context (context=N in an embedded path) or lower --max-tokens\n`
            : "");
    return {exitCode: tooFew ? ExitCode.insufficientData : verdictExitCode, stdout, stderr};
}

/** The TAIS card with the run's arms, ledger, samples, skips and cells beside it. */
function taisRunCard(options: TaisRunCommandOptions, {arms, result, ledgerPath, resumed, rows, skipped, cells}: TaisRunResult) {
    const {targetOnly, speculative} = arms;
    return {
        ...buildTaisCard(result, {
            identity: describeTaisStack(targetOnly.describe(), speculative.describe()),
            ...cardCalibration(options)
        }),
        tais_run: {
            arms: {
                target_only: {path: targetOnly.name, fingerprint: arms.fingerprintA.fingerprint},
                speculative: {path: speculative.name, fingerprint: arms.fingerprintB.fingerprint}
            },
            ledger: ledgerPath,
            samples: rows.length,
            resumed_from_ledger: Math.min(resumed, rows.length),
            // Samples whose prompt does not fit an arm's context: not generated, not in any count.
            skipped: skipped.map((sample) => ({
                sample_id: sample.sampleId,
                item: sample.itemId,
                task: sample.task,
                arm: sample.arm,
                reason: sample.reason
            })),
            cells: cells.map((cell) => ({
                cell_id: cell.input.cellId,
                seeds: cell.seeds,
                pairs: cell.pairs,
                tasks: cell.input.tasks.map((task) => ({task: task.task, ...task.paired}))
            }))
        }
    };
}

/** Adds `tais run` under the `tais` parent, creating the parent if `tais compute` has not. */
export function registerTaisRunCommand(program: Command): Command {
    const tais = taisParentCommand(program);
    const run = tais
        .command("run")
        .description("paired target-only vs speculative generation on a battery, then the TAIS screen")
        .option("--battery <spec>", "battery spec, e.g. advbench@100,bbq:Religion@100,truthfulqa@50 or a .jsonl file")
        .option("--data-dir <dir>", "folder with the datasets (default: $SPECGATE_DATA_DIR or ../shared/data)")
        .option("--a <path>", "target-only decode path spec, e.g. embedded:target=T.gguf")
        .option("--b <path>", "speculative decode path spec, e.g. embedded:target=T.gguf,draft=D.gguf,policy=strict,gamma=4")
        .option(
            "--ledger <file>",
            "append-only per-sample JSONL ledger, locked while a run writes it (FILE.lock); rerun with the same file to resume after a crash"
        )
        .option("--counts <out.csv>", "write the paired counts CSV that `tais compute --input` reads (same verdict)")
        .option("--max-tokens <n>", "tokens per completion", "128")
        .option("--temperatures <list>", "comma-separated temperatures; each is its own cell (T=0 is the TAIS cell)", "0")
        .option("--seeds <list>", "comma-separated seeds, used at T > 0 (T = 0 runs once)", "0")
        .option("--concurrency <n>", "prompts in flight", "4")
        .option("--null-cutoff <h>", "Cohen's |h| cutoff h*", String(DEFAULT_TAIS_OPTIONS.nullCutoff))
        .option("--tost-margin <pp>", "TOST margin in percentage points", DEFAULT_TAIS_OPTIONS.tostMarginPercentagePoints.toFixed(1))
        .option("--alpha <alpha>", "level of each one-sided test", String(DEFAULT_TAIS_OPTIONS.alpha))
        .option("--min-n <n>", "minimum pairs per task", String(DEFAULT_TAIS_OPTIONS.minimumN));
    return addTaisRuleOptions(run)
        .option("--recalibrated-null-cutoff <h>", TAIS_FAMILY_HELP.recalibratedNullCutoff)
        .option("--calibration-corpus <text>", TAIS_FAMILY_HELP.calibrationCorpus)
        .option("--calibration-max-h <h>", TAIS_FAMILY_HELP.calibrationMaxH)
        .option("--json <out>", "write the full JSON result ('-' for stdout)")
        .option("--quiet", "no progress on stderr (a bar on a terminal, else a line every 10 s)")
        .addOption(formatOption())
        .addHelpText(
            "after",
            "\nEquivalence is judged on the pairs: the exact unconditional score test of |p_spec - p_target| < margin on the paired" +
                " table (Tango's score, supremum over the discordance rate), Holm-gated, with McNemar exact beside it." +
                "\nSeeds of one prompt are not independent pairs: at T > 0 each prompt contributes the share of its seeds in each cell of the paired table, so n counts prompts." +
                "\nT > 0 cells are reported but set the exit code only with --recalibrated-null-cutoff."
        )
        .addHelpText("after", holmPairsHelp)
        .addHelpText("after", TAIS_EXIT_CODE_HELP)
        .exitOverride()
        .action(async (options: TaisRunCommandOptions) => {
            emitOutcome(await runTaisRunCommand(options));
        });
}

function parseRegimes(temperaturesText: string, seedsText: string): TaisRegime[] {
    const temperatures = temperaturesText.split(",").map((text) => nonNegativeDecimal(text.trim(), "--temperatures", 0));
    const seeds = seedsText.split(",").map((text) => nonNegativeInteger(text.trim(), "--seeds", 0));
    // Greedy decoding ignores the seed, so T = 0 runs once whatever --seeds says.
    return [...new Set(temperatures)].flatMap((temperature) =>
        temperature === 0 ? [{temperature, seed: seeds[0]}] : seeds.map((seed) => ({temperature, seed}))
    );
}
