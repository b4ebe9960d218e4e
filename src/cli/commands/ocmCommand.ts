import type {Command} from "commander";
import {assertSameVocabulary} from "../../backend/assertSameVocabulary.js";
import type {GpuChoice} from "../../backend/gpuChoice.js";
import type {BackendChoice} from "../../backend/loadModelBackend.js";
import type {ModelBackend} from "../../backend/ModelBackend.js";
import {backendOption, gpuLayersOption, gpuOption} from "../backendOption.js";
import {buildCorrectionMemory, type CorrectionMemoryCalibration} from "../../correctionMemory/buildCorrectionMemory.js";
import {loadCorrectionMemory, saveCorrectionMemory} from "../../correctionMemory/correctionMemoryFile.js";
import {loadPrompts} from "../loadPrompts.js";
import {stopStrings} from "../stopStrings.js";
import {checkOutputFile} from "../checkOutputPath.js";
import {openCliModels} from "../openCliModels.js";
import {integerOption} from "../parseIntegerOption.js";
import {writeOutputFile} from "../writeOutputFile.js";
import {addSamplingOptions, samplingFromCli} from "../samplingCliOptions.js";
import type {SamplingOptions} from "../../distributions/SamplingOptions.js";
import {contextSizeOption} from "../contextSizeOption.js";
import {promptsWithinContext, type SkippedPrompt, skippedPromptsLine} from "../promptsWithinContext.js";
import {mostSkipped} from "../../engine/fitsContext.js";
import {ExitCode} from "../exitCodes.js";

interface OcmBuildOptions {
    target: string;
    draft: string;
    corpus: string;
    out: string;
    initial?: string;
    gamma: number;
    temperature: number;
    topK: number;
    topP: number;
    minP: number;
    maxTokens: number;
    contextSize?: number;
    stop?: string[];
    seed: number;
    threads: number;
    backend?: BackendChoice;
    gpu?: GpuChoice;
    gpuLayers?: number;
}

/** `specgate ocm build`: the Calibrated SD paper's calibration pass, writing the correction memory `calibrated` loads. */
export function registerOcmCommand(program: Command): void {
    const ocm = program
        .command("ocm")
        .description("the Online Correction Memory of Calibrated SD: which draft tokens the target keeps replacing, and by what");
    addSamplingOptions(
        ocm
            .command("build")
            .description("run standard speculative decoding over an unlabelled corpus and record (draft, target) divergence counts")
            .requiredOption("--target <T.gguf>", "target model")
            .requiredOption("--draft <D.gguf>", "draft model")
            .requiredOption("--corpus <FILE>", 'prompts: one per line, or JSONL rows with a "prompt" field')
            .requiredOption("--out <memory.json>", "memory file to write (atomically)")
            .option("--initial <memory.json>", "extend this memory instead of starting empty")
            .option(
                "--gamma <N>",
                "draft tokens per step (default 6: not published, the stored Calibrated SD text leaves its lookahead blank; secondary descriptions give 6)",
                integerOption(1, 64),
                6
            ),
        {temperature: 0}
    )
        .option("--max-tokens <N>", "tokens generated per prompt", integerOption(1), 128)
        .option(
            "--stop <text...>",
            "stop strings, \\n decoded: end each generation where answers end, so the memory holds no pairs from text after them"
        )
        .option(
            "--seed <S>",
            "seed of the sampler. --temperature defaults to 0 here, which Calibrated SD does not do: its calibration 'set[s] the temperature' (value not published) " +
                "'to broaden the CSD's exposure to diverse valid token pairs'; 0 was chosen so a memory rebuilds byte for byte. Pass --temperature > 0 to follow the paper",
            integerOption(0),
            0
        )
        .option("--threads <N>", "CPU threads per model evaluation", integerOption(1, 256), 1)
        .addOption(backendOption())
        .addOption(gpuOption())
        .addOption(gpuLayersOption())
        .addOption(contextSizeOption())
        .action(runOcmBuild);
}

const COMMAND_NAME = "specgate ocm build";

/** Builds the memory on the prompts that fit the context, writes --out and reports it. */
async function runOcmBuild(options: OcmBuildOptions): Promise<void> {
    const sampling = samplingFromCli(options);
    const stop = stopStrings(options.stop);
    const corpus = await loadPrompts(options.corpus);
    await checkOutputFile(options.out, "--out");
    const models = await openCliModels(COMMAND_NAME, options, {
        threads: options.threads,
        backend: options.backend,
        gpu: options.gpu,
        gpuLayers: options.gpuLayers,
        contextSize: options.contextSize
    });
    try {
        assertSameVocabulary(models.target, models.draft, "--draft");
        // The context rule: prompts that do not fit with --max-tokens are skipped and counted.
        const {kept: prompts, skipped} = promptsWithinContext(models.target, models.draft, corpus, options.maxTokens, "--corpus");
        const calibration = await buildMemory(options, models, prompts, {sampling, stop});
        await writeOutputFile(() => saveCorrectionMemory(calibration.memory, options.out), options.out, "--out");
        renderOcmBuild(options, calibration, skipped, corpus.length);
    } finally {
        await models.draft.dispose();
        await models.target.dispose();
    }
}

/** The calibration pass over the prompts, extending --initial when given. */
async function buildMemory(
    options: OcmBuildOptions,
    {target, draft}: {target: ModelBackend; draft: ModelBackend},
    prompts: readonly string[],
    settings: {sampling: SamplingOptions; stop: string[]}
): Promise<CorrectionMemoryCalibration> {
    const initial = options.initial != null ? await loadCorrectionMemory(options.initial, target.vocabularyIdentity()) : undefined;
    return buildCorrectionMemory(target, draft, prompts, {
        gamma: options.gamma,
        sampling: settings.sampling,
        maxTokens: options.maxTokens,
        stop: settings.stop,
        seed: options.seed,
        initial
    });
}

/** The memory's summary on stdout, the skipped prompts on stderr, and exit code 3 when most were skipped. */
function renderOcmBuild(
    options: OcmBuildOptions,
    calibration: CorrectionMemoryCalibration,
    skipped: readonly SkippedPrompt[],
    total: number
): void {
    process.stdout.write(
        `${options.out}: ${calibration.memory.size} pairs from ${calibration.divergences} divergences over ${calibration.steps} steps on ${calibration.prompts} prompts\n`
    );
    process.stderr.write(skippedPromptsLine(COMMAND_NAME, skipped, total, options.maxTokens));
    if (mostSkipped(skipped.length, total)) {
        process.stderr.write(
            `${COMMAND_NAME}: INSUFFICIENT DATA: ${skipped.length} of ${total} prompt(s) were skipped (more than half); ` +
                "the memory does not stand for the corpus\n"
        );
        process.exitCode = ExitCode.insufficientData;
    }
}
