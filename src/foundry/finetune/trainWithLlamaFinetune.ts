import {mkdir, mkdtemp, readFile, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {dirname, join} from "node:path";
import {InvalidInputError} from "../../errors.js";
import {ByteTokenizer} from "../../gguf/ByteTokenizer.js";
import {writeFileAtomic} from "../../io/writeFileAtomic.js";
import {type CorpusManifest, documentSeparator} from "../corpus/writeCorpus.js";
import {initializeLlamaWeights} from "../model/initializeLlamaWeights.js";
import {llamaParameterCount} from "../model/llamaTensorLayout.js";
import {readLlamaGguf} from "../model/readLlamaGguf.js";
import {writeLlamaGguf} from "../model/writeLlamaGguf.js";
import {type FinetuneText, finetuneText} from "./finetuneText.js";
import {locateLlamaCppTool} from "./locateLlamaCppTool.js";
import {formatModelShape, type ModelShape, shapeConfig} from "./ModelShape.js";
import type {FinetuneProgress} from "./parseFinetuneProgress.js";
import {type EpochSummary, type LlamaFinetuneArguments, llamaFinetuneCommandLine, runLlamaFinetune} from "./runLlamaFinetune.js";

export interface FinetuneTrainingOptions {
    /** A directory written by `specgate corpus` (train.txt, validation.txt, manifest.json). */
    readonly corpus: string;
    /** Where the trained F32 GGUF goes; a report lands beside it as `<out>.train.json`. */
    readonly out: string;
    readonly shape: ModelShape;
    /** Tokens per training window (and the model's context length). Default 256. */
    readonly contextLength?: number;
    /** Passes over the training text; the learning rate decays once per epoch. Default 1. */
    readonly epochs?: number;
    /** Optimizer steps in all (one per window); the training documents are cycled or cut to fit. */
    readonly steps?: number;
    /** A wall-clock budget: a short calibration run measures windows/s and sizes the run to fit. */
    readonly seconds?: number;
    /** Continue from this GGUF (same shape) instead of random weights. */
    readonly initialModel?: string;
    /** Seeds the initial weights (llama-finetune itself reads the windows in file order). Default 1. */
    readonly seed?: number;
    readonly learningRate?: number;
    /** Reached in the last epoch (exponential decay per epoch). Default learningRate / 10. */
    readonly minimumLearningRate?: number;
    readonly weightDecay?: number;
    readonly threads?: number;
    /** Validation documents llama-finetune evaluates after each epoch (the first ones of validation.txt). Default 600. */
    readonly validationDocuments?: number;
    /** general.name of the written GGUF. */
    readonly name?: string;
    readonly onProgress?: (progress: FinetuneProgress, epoch: number) => void;
    readonly onMessage?: (message: string) => void;
    readonly environment?: NodeJS.ProcessEnv;
}

export interface FinetuneTrainingReport {
    readonly format: "specgate-train/1";
    readonly trainer: "llama-finetune";
    readonly model: string;
    readonly shape: string;
    readonly parameters: number;
    readonly contextLength: number;
    readonly corpus: {
        readonly directory: string;
        readonly seed: number;
        readonly samples: number;
        readonly mixture: CorpusManifest["mixture"];
    };
    readonly seed: number;
    readonly epochs: number;
    readonly learningRate: number;
    readonly minimumLearningRate: number;
    readonly weightDecay: number;
    readonly threads: number;
    readonly trainDocuments: number;
    readonly validationDocuments: number;
    /** Optimizer steps (windows) over all epochs, and the tokens they processed (steps × contextLength). */
    readonly steps: number;
    readonly tokensProcessed: number;
    /** Distinct training-stream tokens per epoch (windows overlap by half, so each is read twice). */
    readonly trainTextTokens: number;
    readonly wallSeconds: number;
    /** Training windows only: tokens processed / seconds in the training phase of the epochs. */
    readonly tokensPerSecond: number;
    readonly calibration?: {readonly windowsPerSecond: number; readonly seconds: number};
    readonly history: readonly {
        epoch: number;
        trainLoss: number;
        trainAccuracy: number;
        validationLoss?: number;
        validationAccuracy?: number;
    }[];
    readonly finalValidationLoss?: number;
    readonly commandLine: readonly string[];
}

/**
 * Learning rate 6e-4: a step here is one window of 256 tokens. Probes from random weights with the
 * patched llama-finetune: 0.27M parameters, 3,000 steps: validation loss 1.21 at 1e-3, 1.27 at 3e-3;
 * 3.5M parameters, 800 steps: 1.68 at 1e-3, 1.65 at 5e-4.
 */
const defaults = {contextLength: 256, epochs: 1, seed: 1, learningRate: 6e-4, weightDecay: 0.01, threads: 2};

/**
 * Trains a randomly initialised llama model on a corpus with llama.cpp's llama-finetune, and writes
 * it as an F32 GGUF through our writer (so every family member carries byte-identical tokenizer
 * metadata).
 *
 * Why llama-finetune and not the TypeScript trainer (src/foundry/training): on this 2-core machine
 * it trains an order of magnitude faster (ggml's fused CPU kernels against float64 JavaScript loops;
 * docs/model-foundry.md), which is the difference between a 3M-parameter target and a toy. Its limits: next-token cross-entropy on
 * plain text with hard labels only, batch = one window, learning rate changed once per epoch, no
 * warm-up or gradient clipping. It needs two patches applied by scripts/buildLlamaCppTools.sh:
 * scripts/llama-finetune-gradient-reset.patch clears gradients between steps, and
 * scripts/llama-finetune-training-graph.patch lets gradients reach attn_k, attn_v (attention on the
 * current window's keys and values instead of the KV cache, switched on by the environment set in
 * runLlamaFinetune) and token_embd (frozen upstream). Without the second, those three matrices kept
 * their random initialisation and the first shipped target could not copy numbers from its prompt
 * (14% arithmetic accuracy). The TS trainer stays for what needs its control: tiny CI runs, exact resume,
 * and s-CDF fine-tuning of drafters, which needs per-task weights and soft target distributions.
 */
export async function trainWithLlamaFinetune(options: FinetuneTrainingOptions): Promise<FinetuneTrainingReport> {
    const settings = trainingSettings(options);
    const binary = locateLlamaCppTool("llama-finetune", options.environment);
    const corpus = await readTrainingCorpus(options);
    const config = shapeConfig(options.shape, settings.contextLength);
    const work = await mkdtemp(join(tmpdir(), "specgate-train-"));
    const started = performance.now();
    try {
        const initial = join(work, "initial.gguf");
        await writeInitialModel(options, config, settings, initial);
        const runner = new FinetuneRunner(binary, initial, work, settings);
        const calibrated =
            options.steps === undefined && options.seconds !== undefined
                ? await calibrateWindows(runner, corpus, options.seconds, settings, started)
                : undefined;
        const trainWindows =
            calibrated?.trainWindows ?? (options.steps === undefined ? undefined : Math.ceil(options.steps / settings.epochs));
        if (calibrated !== undefined) settings.message(calibrated.line);

        const layout = finetuneText(corpus.train, corpus.validation, {
            contextLength: settings.contextLength,
            trainWindows,
            countTokens: corpus.countTokens
        });
        settings.message(
            `training ${formatModelShape(options.shape)} (${llamaParameterCount(config)} parameters): ${settings.epochs} epoch(s) × ${layout.trainWindows} windows of ${settings.contextLength} tokens, ${layout.trainDocuments} training documents, ${layout.validationWindows} validation windows`
        );
        const rawOutput = join(work, "trained.gguf");
        const {finetuneArguments, result} = await runner.run(layout, settings.epochs, rawOutput, runner.mainRates, options.onProgress);

        // Re-export through our writer: same tensors, our metadata (and name) on every family member.
        const trained = readLlamaGguf(rawOutput);
        await mkdir(dirname(options.out), {recursive: true});
        await writeLlamaGguf(options.out, trained.config, trained.weights, corpus.tokenizer, {name: options.name});

        const report = trainingReport(options, settings, corpus.manifest, layout, result, finetuneArguments, {
            parameters: llamaParameterCount(config),
            wallSeconds: (performance.now() - started) / 1000,
            calibration: calibrated?.calibration
        });
        await writeFileAtomic(`${options.out}.train.json`, `${JSON.stringify(report, null, 2)}\n`);
        return report;
    } finally {
        await rm(work, {recursive: true, force: true});
    }
}

/** The options with their defaults, checked (an InvalidInputError names the first out of range). */
function trainingSettings(options: FinetuneTrainingOptions) {
    const contextLength = options.contextLength ?? defaults.contextLength;
    const epochs = options.epochs ?? defaults.epochs;
    const seed = options.seed ?? defaults.seed;
    const learningRate = options.learningRate ?? defaults.learningRate;
    const minimumLearningRate = options.minimumLearningRate ?? learningRate / 10;
    const weightDecay = options.weightDecay ?? defaults.weightDecay;
    const threads = options.threads ?? defaults.threads;
    checkTrainingNumbers({epochs, steps: options.steps, seconds: options.seconds, learningRate, minimumLearningRate, weightDecay, threads});
    const message = options.onMessage ?? (() => undefined);
    return {contextLength, epochs, seed, learningRate, minimumLearningRate, weightDecay, threads, message};
}

type TrainingSettings = ReturnType<typeof trainingSettings>;

/** The corpus's manifest, its training documents and the first validation documents, and how to count tokens. */
async function readTrainingCorpus(options: FinetuneTrainingOptions) {
    const manifest = JSON.parse(await readFile(join(options.corpus, "manifest.json"), "utf8")) as CorpusManifest;
    const train = splitDocuments(await readFile(join(options.corpus, "train.txt"), "utf8"));
    // Validation runs after every epoch; a few hundred windows measure the loss to ±0.01 at a few % of the time.
    const validation = splitDocuments(await readFile(join(options.corpus, "validation.txt"), "utf8")).slice(
        0,
        options.validationDocuments ?? 600
    );
    const tokenizer = new ByteTokenizer();
    return {manifest, train, validation, tokenizer, countTokens: (text: string): number => tokenizer.tokenize(text).length};
}

type TrainingCorpus = Awaited<ReturnType<typeof readTrainingCorpus>>;

/** The model training starts from: random weights of the shape, or `initialModel` (which must have that shape). */
async function writeInitialModel(
    options: FinetuneTrainingOptions,
    config: ReturnType<typeof shapeConfig>,
    settings: TrainingSettings,
    path: string
): Promise<void> {
    const tokenizer = new ByteTokenizer();
    if (options.initialModel === undefined) {
        await writeLlamaGguf(path, config, initializeLlamaWeights(config, {seed: settings.seed}), tokenizer, {name: options.name});
        return;
    }
    const start = readLlamaGguf(options.initialModel);
    if (formatModelShape({...start.config}) !== formatModelShape(options.shape) || start.config.tiedOutput)
        throw new InvalidInputError(
            `${options.initialModel} has shape ${formatModelShape(start.config)}, not ${formatModelShape(options.shape)}`,
            "initialModel"
        );
    await writeLlamaGguf(path, {...start.config, contextLength: settings.contextLength}, start.weights, tokenizer, {name: options.name});
}

/** Runs llama-finetune on a text layout from the initial model, with the run's settings. */
class FinetuneRunner {
    public readonly mainRates: {peak: number; minimum: number};

    public constructor(
        private readonly binary: string,
        private readonly initial: string,
        private readonly work: string,
        private readonly settings: TrainingSettings
    ) {
        this.mainRates = {peak: settings.learningRate, minimum: settings.minimumLearningRate};
    }

    /** A path in the run's scratch folder. */
    public workFile(name: string): string {
        return join(this.work, name);
    }

    public async run(
        layout: FinetuneText,
        epochs: number,
        output: string,
        rates: {peak: number; minimum: number},
        onProgress?: FinetuneTrainingOptions["onProgress"]
    ) {
        const textFile = this.workFile("train-text.txt");
        await writeFile(textFile, layout.text);
        const {contextLength, weightDecay, threads, seed} = this.settings;
        const finetuneArguments: LlamaFinetuneArguments = {
            binary: this.binary,
            model: this.initial,
            textFile,
            output,
            contextLength,
            microBatch: contextLength,
            epochs,
            learningRate: rates.peak,
            minimumLearningRate: epochs > 1 ? rates.minimum : rates.peak,
            weightDecay,
            validationSplit: layout.validationSplit,
            threads,
            seed
        };
        return {finetuneArguments, result: await runLlamaFinetune(finetuneArguments, {onProgress})};
    }
}

/**
 * With a time budget: a short probe run measures windows per second (training and validation) and
 * the start-up overhead, and the training windows per epoch that fit the seconds left follow.
 */
async function calibrateWindows(
    runner: FinetuneRunner,
    corpus: TrainingCorpus,
    seconds: number,
    settings: TrainingSettings,
    started: number
) {
    const {contextLength, epochs} = settings;
    const probe = finetuneText(corpus.train, corpus.validation.slice(0, 40), {
        contextLength,
        trainWindows: 48,
        countTokens: corpus.countTokens
    });
    const {result} = await runner.run(probe, 1, runner.workFile("calibration.gguf"), runner.mainRates);
    const windowsPerSecond = result.epochs[0].trainWindowsPerSecond ?? probe.trainWindows / phaseSeconds(result.epochs, "train");
    const validationWindowsPerSecond =
        result.epochs[0].validationWindowsPerSecond ?? probe.validationWindows / phaseSeconds(result.epochs, "val");
    const overhead = Math.max(
        0,
        result.wallSeconds - probe.trainWindows / windowsPerSecond - probe.validationWindows / validationWindowsPerSecond
    );
    const full = finetuneText(corpus.train, corpus.validation, {contextLength, trainWindows: 1, countTokens: corpus.countTokens});
    const remaining = seconds - (performance.now() - started) / 1000 - overhead;
    const perEpoch = remaining / epochs - full.validationWindows / validationWindowsPerSecond;
    const trainWindows = Math.floor(perEpoch * windowsPerSecond);
    if (trainWindows < 1)
        throw new InvalidInputError(
            `${seconds} s leave no time to train at ${windowsPerSecond.toFixed(1)} windows/s once validation and start-up are paid`,
            "seconds"
        );
    return {
        trainWindows,
        calibration: {windowsPerSecond, seconds: (performance.now() - started) / 1000},
        line: `calibration: ${windowsPerSecond.toFixed(2)} windows/s (${(windowsPerSecond * contextLength).toFixed(0)} tokens/s); ${trainWindows} windows per epoch fit ${seconds} s`
    };
}

/** The report written beside the model (`.train.json`) and returned. */
function trainingReport(
    options: FinetuneTrainingOptions,
    settings: TrainingSettings,
    manifest: CorpusManifest,
    layout: FinetuneText,
    result: Awaited<ReturnType<typeof runLlamaFinetune>>,
    finetuneArguments: LlamaFinetuneArguments,
    run: {parameters: number; wallSeconds: number; calibration: FinetuneTrainingReport["calibration"]}
): FinetuneTrainingReport {
    const {contextLength, epochs, seed, learningRate, minimumLearningRate, weightDecay, threads} = settings;
    const steps = layout.trainWindows * epochs;
    const trainSeconds = result.epochs.reduce(
        (sum, summary) =>
            sum +
            (summary.trainWindowsPerSecond === undefined
                ? summary.train.elapsedSeconds
                : layout.trainWindows / summary.trainWindowsPerSecond),
        0
    );
    const history = result.epochs.map((summary) => ({
        epoch: summary.epoch,
        trainLoss: summary.train.loss,
        trainAccuracy: summary.train.accuracy,
        validationLoss: summary.validation?.loss,
        validationAccuracy: summary.validation?.accuracy
    }));
    return {
        format: "specgate-train/1",
        trainer: "llama-finetune",
        model: options.out,
        shape: formatModelShape(options.shape),
        parameters: run.parameters,
        contextLength,
        corpus: {directory: options.corpus, seed: manifest.seed, samples: manifest.samples, mixture: manifest.mixture},
        seed,
        epochs,
        learningRate,
        minimumLearningRate,
        weightDecay,
        threads,
        trainDocuments: layout.trainDocuments,
        validationDocuments: layout.validationDocuments,
        steps,
        tokensProcessed: steps * contextLength,
        trainTextTokens: layout.tokens,
        wallSeconds: run.wallSeconds,
        tokensPerSecond: (steps * contextLength) / Math.max(trainSeconds, 1e-3),
        calibration: run.calibration,
        history,
        finalValidationLoss: history.at(-1)?.validationLoss,
        commandLine: [finetuneArguments.binary, ...llamaFinetuneCommandLine(finetuneArguments)]
    };
}

/** Documents of train.txt / validation.txt (blank-line separated). */
export function splitDocuments(text: string): string[] {
    return text
        .split(documentSeparator)
        .map((document) => document.replace(/\n$/, ""))
        .filter((document) => document !== "");
}

/** Seconds spent in one phase over all epochs, from the last progress report of each (1 s resolution). */
function phaseSeconds(epochs: readonly EpochSummary[], phase: "train" | "val"): number {
    let seconds = 0;
    for (const summary of epochs) seconds += (phase === "train" ? summary.train : summary.validation)?.elapsedSeconds ?? 0;
    return Math.max(seconds, 1);
}

/** Throws an InvalidInputError naming the first option out of range. */
export function checkTrainingNumbers(values: {
    epochs: number;
    steps?: number;
    seconds?: number;
    learningRate: number;
    minimumLearningRate: number;
    weightDecay: number;
    threads: number;
}): void {
    if (!Number.isSafeInteger(values.epochs) || values.epochs < 1)
        throw new InvalidInputError(`must be a positive integer, got ${values.epochs}`, "epochs");
    if (values.steps !== undefined && (!Number.isSafeInteger(values.steps) || values.steps < 1))
        throw new InvalidInputError(`must be a positive integer, got ${values.steps}`, "steps");
    if (values.seconds !== undefined && !(values.seconds > 0 && Number.isFinite(values.seconds)))
        throw new InvalidInputError(`must be a positive number, got ${values.seconds}`, "seconds");
    if (values.steps !== undefined && values.seconds !== undefined)
        throw new InvalidInputError("give either a step count or a time budget, not both", "steps");
    if (!(values.learningRate > 0 && Number.isFinite(values.learningRate)))
        throw new InvalidInputError(`must be a positive number, got ${values.learningRate}`, "learningRate");
    if (!(values.minimumLearningRate > 0 && values.minimumLearningRate <= values.learningRate))
        throw new InvalidInputError(`must be in (0, learningRate], got ${values.minimumLearningRate}`, "minimumLearningRate");
    if (!(values.weightDecay >= 0 && Number.isFinite(values.weightDecay)))
        throw new InvalidInputError(`must be a finite number >= 0, got ${values.weightDecay}`, "weightDecay");
    if (!Number.isSafeInteger(values.threads) || values.threads < 1)
        throw new InvalidInputError(`must be a positive integer, got ${values.threads}`, "threads");
}
