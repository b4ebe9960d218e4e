import type {Command} from "commander";
import {parseGammaSpec} from "../../engine/gammaSpec.js";
import type {GpuChoice} from "../../backend/gpuChoice.js";
import type {BackendChoice} from "../../backend/loadModelBackend.js";
import type {ModelBackend} from "../../backend/ModelBackend.js";
import {backendOption, gpuLayersOption, gpuOption, tokenSelectionOption} from "../backendOption.js";
import {type BenchOptions, type BenchRow, formatBenchHeader, formatBenchTable, runBench} from "../../benchRunner/runBench.js";
import {drafterLabel, type DrafterSpec} from "../../engine/drafters/parseDrafterSpec.js";
import {sharesVocabulary} from "../../backend/assertSameVocabulary.js";
import {runDraftSequencePredictor} from "../../engine/predictor/runDraftSequencePredictor.js";
import {InvalidInputError} from "../../errors.js";
import {parsePolicyList} from "../../policies/parsePolicyList.js";
import type {PolicyConfig} from "../../policies/policyConfigSchema.js";
import type {SamplingOptions} from "../../distributions/SamplingOptions.js";
import {drafterOptionHelp, resolveCliDrafterList} from "../drafterOption.js";
import {checkOutputFile} from "../checkOutputPath.js";
import {type CliModels, openCliModels} from "../openCliModels.js";
import {integerOption} from "../parseIntegerOption.js";
import {addSamplingOptions, samplingFromCli} from "../samplingCliOptions.js";
import {loadPrompts} from "../loadPrompts.js";
import {promptsWithinContext, type SkippedPrompt, skippedPromptsLine} from "../promptsWithinContext.js";
import {contextSizeOption} from "../contextSizeOption.js";
import {mostSkipped} from "../../engine/fitsContext.js";
import {ExitCode} from "../exitCodes.js";
import {writeJsonOutput} from "../writeJsonOutput.js";
import {createProgress} from "../progress.js";

interface BenchCliOptions {
    target: string;
    quiet?: boolean;
    draft?: string;
    drafters: string;
    prompts: string;
    policies: string;
    gamma: string;
    temperature: number;
    topK: number;
    topP: number;
    minP: number;
    maxTokens: number;
    repeats: number;
    seed: number;
    threads: number;
    backend?: BackendChoice;
    gpu?: GpuChoice;
    gpuLayers?: number;
    /** --token-selection: true device, false host, undefined auto. */
    tokenSelection?: boolean;
    contextSize?: number;
    predictor: boolean;
    json?: string;
}

const COMMAND_NAME = "specgate bench";

/** The flags checked (each bad one an InvalidInputError naming its flag), before any model loads. */
interface BenchSettings {
    readonly policies: PolicyConfig[];
    readonly gammas: number[];
    readonly autoGammas: number[];
    readonly drafters: DrafterSpec[];
    readonly sampling: SamplingOptions;
}

/** What a bench run measured, for the table and the JSON. */
interface BenchResult {
    readonly rows: BenchRow[];
    readonly prompts: readonly string[];
    readonly skipped: readonly SkippedPrompt[];
    readonly totalPrompts: number;
}

export function registerBenchCommand(program: Command): void {
    addBenchRunOptions(
        addSamplingOptions(
            program
                .command("bench")
                .description(
                    "compare target-only decoding, every drafter × policy × γ and node-llama-cpp's predictor on the same prompts, in one process"
                )
                .requiredOption("--target <T.gguf>", "target model")
                .option("--draft <D.gguf>", "draft model or EAGLE-3 head (needed by the model and eagle3 drafters and the predictor path)")
                .option(
                    "--drafters <list>",
                    `comma-separated drafters compared side by side, e.g. model,ngram,suffix,ngram+model; each one a ${drafterOptionHelp.replace("default: model with --draft, else none", "")}`,
                    "model"
                )
                .option(
                    "--prompts <FILE|battery|repetitive>",
                    'JSONL with "prompt" fields, a text file with one prompt per line, the built-in battery, or the built-in repetitive battery (tool sessions, JSON rewrites, copy drills from the family corpus)',
                    "battery"
                )
                .option(
                    "--policies <list>",
                    "comma-separated policy specs (see --policy of generate), e.g. strict,block",
                    "greedy,strict,fuzzy:js:0.4,calibrated"
                )
                .option(
                    "--gamma <list>",
                    "comma-separated draft lengths, each in [1, 64] (target-only, γ = 0, is always measured), or auto / auto:MAX (chosen each step in 0..8 / 0..MAX)",
                    "1,4,8"
                )
        )
    ).action(runBenchAction);
}

/** Budget, rounds, seed, where the models run, and the outputs. */
function addBenchRunOptions(command: Command): Command {
    return command
        .option("--max-tokens <N>", "tokens per prompt", integerOption(1), 64)
        .option(
            "--repeats <N>",
            "rounds: each runs every row once over the prompts, in turn; speed-ups are the median over rounds with a distribution-free interval (95% from 6 rounds; fewer give their range, at lower confidence)",
            integerOption(1, 100),
            3
        )
        .option("--seed <S>", "seed (prompt i uses seed + i)", integerOption(0), 0)
        .option("--threads <N>", "CPU threads per model evaluation", integerOption(1, 256), 1)
        .addOption(backendOption())
        .addOption(gpuOption())
        .addOption(gpuLayersOption())
        .addOption(tokenSelectionOption())
        .addOption(contextSizeOption())
        .option("--json <OUT>", 'write every row with full telemetry to OUT ("-" for stdout)')
        .option("--no-predictor", "skip node-llama-cpp's own DraftSequenceTokenPredictor path")
        .option("--quiet", "no progress on stderr (a bar on a terminal, else a line every 10 s)");
}

async function runBenchAction(options: BenchCliOptions): Promise<void> {
    const settings = parseBenchOptions(options);
    const allPrompts = await loadPrompts(options.prompts);
    await checkOutputFile(options.json, "--json");
    const models = await openCliModels(COMMAND_NAME, options, {
        threads: options.threads,
        backend: options.backend,
        gpu: options.gpu,
        gpuLayers: options.gpuLayers,
        deviceSelection: options.tokenSelection,
        contextSize: options.contextSize
    });
    try {
        const result = await measureBench(options, settings, models, allPrompts);
        await renderBench(options, settings, result);
    } finally {
        await models.draft?.dispose();
        await models.target.dispose();
    }
}

function parseBenchOptions(options: BenchCliOptions): BenchSettings {
    const policies = parsePolicyList(options.policies, "--policies");
    const {gammas, autoGammas} = parseGammaList(options.gamma);
    return {
        policies,
        gammas,
        autoGammas,
        drafters: resolveCliDrafterList(options.drafters, options.draft),
        sampling: samplingFromCli(options)
    };
}

/** --gamma's list: fixed draft lengths in [1, 64], and the MAX of each auto / auto:MAX entry. */
function parseGammaList(text: string): {gammas: number[]; autoGammas: number[]} {
    const entries = text.split(",");
    const autoGammas = entries.filter((value) => value.startsWith("auto")).map((value) => parseGammaSpec(value, "--gamma").maxGamma!);
    const gammas = entries
        .filter((value) => !value.startsWith("auto"))
        .map((value) => {
            const gamma = Number(value);
            if (!Number.isInteger(gamma) || gamma < 1 || gamma > 64)
                throw new InvalidInputError(
                    `expected integers in [1, 64], got "${value}" (γ = 0 is target-only decoding, always the table's first row)`,
                    "--gamma"
                );
            return gamma;
        });
    return {gammas, autoGammas};
}

/** Runs every row on the prompts that fit the context; skipped prompts and a skipped predictor path are said on stderr first. */
async function measureBench(
    options: BenchCliOptions,
    settings: BenchSettings,
    {target, draft}: CliModels,
    allPrompts: readonly string[]
): Promise<BenchResult> {
    // Prompts that do not fit the context with --max-tokens are skipped and named, not a run the context cuts short.
    const {kept: prompts, skipped} = promptsWithinContext(target, draft, allPrompts, options.maxTokens, "--prompts");
    process.stderr.write(skippedPromptsLine(COMMAND_NAME, skipped, allPrompts.length, options.maxTokens));
    const extraPaths = predictorPaths(options, settings, target, draft);
    const progress = createProgress({command: COMMAND_NAME, unit: "runs", quiet: options.quiet});
    const rows = await runBench({
        target,
        draft,
        drafters: settings.drafters,
        prompts,
        policies: settings.policies,
        gammas: settings.gammas,
        autoGammas: settings.autoGammas,
        sampling: settings.sampling,
        maxTokens: options.maxTokens,
        seed: options.seed,
        repeats: options.repeats,
        extraPaths,
        onProgress: (done, total, label) => progress.update(done, total, label)
    });
    progress.finish();
    return {rows, prompts, skipped, totalPrompts: allPrompts.length};
}

/**
 * node-llama-cpp's own speculative path, one per γ, with its defaults otherwise (minTokens 0,
 * minConfidence 0.6): what a node-llama-cpp user gets today. It drafts in the target's tokens: a
 * draft of another vocabulary (model:retokenize) has none to give.
 */
function predictorPaths(
    options: BenchCliOptions,
    {gammas, sampling}: BenchSettings,
    target: ModelBackend,
    draft: ModelBackend | undefined
): NonNullable<BenchOptions["extraPaths"]> {
    const draftPath = options.draft;
    const predictor = options.predictor && draftPath != null && draft != null && sharesVocabulary(target, draft);
    if (options.predictor && draft != null && !predictor)
        process.stderr.write(
            `${COMMAND_NAME}: node-llama-cpp's predictor path is skipped: the draft model's vocabulary is not the target's\n`
        );
    if (!predictor) return [];
    return gammas.map((gamma) => ({
        label: `node-llama-cpp predictor γ=${gamma}`,
        run: async (prompt: string, seed: number) => {
            const run = await runDraftSequencePredictor({
                target: options.target,
                draft: draftPath,
                prompt,
                maxTokens: options.maxTokens,
                temperature: sampling.temperature,
                topK: sampling.topK,
                topP: sampling.topP,
                seed,
                predictor: {maxTokens: gamma},
                threads: options.threads
            });
            return {tokens: run.tokens, decodeMilliseconds: run.elapsedMilliseconds};
        }
    }));
}

/** The table on stdout (unless --json -), the JSON, and exit code 3 when most prompts were skipped. */
async function renderBench(options: BenchCliOptions, settings: BenchSettings, result: BenchResult): Promise<void> {
    const {rows, prompts, skipped, totalPrompts} = result;
    if (options.json !== "-")
        process.stdout.write(
            formatBenchHeader({
                target: options.target,
                draft: options.draft ?? null,
                prompts: prompts.length,
                skippedPrompts: skipped.length,
                promptSource: options.prompts === "battery" ? "the built-in battery" : options.prompts,
                maxTokens: options.maxTokens,
                temperature: settings.sampling.temperature,
                rounds: options.repeats,
                threads: options.threads
            }) + formatBenchTable(rows, options.repeats)
        );
    if (options.json != null)
        await writeJsonOutput(options.json, {
            date: new Date().toISOString(),
            node: process.version,
            target: options.target,
            draft: options.draft ?? null,
            drafters: settings.drafters.map(drafterLabel),
            sampling: settings.sampling,
            maxTokens: options.maxTokens,
            prompts: prompts.length,
            skippedPrompts: skipped,
            threads: options.threads,
            rows
        });
    if (mostSkipped(skipped.length, totalPrompts)) {
        process.stderr.write(
            `${COMMAND_NAME}: INSUFFICIENT DATA: ${skipped.length} of ${totalPrompts} prompt(s) were skipped (more than half); ` +
                "the rows do not stand for the prompt set\n"
        );
        process.exitCode = ExitCode.insufficientData;
    }
}
