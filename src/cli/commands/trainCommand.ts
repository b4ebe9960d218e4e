import type {Command} from "commander";
import {InvalidInputError} from "../../errors.js";
import {parseModelShape} from "../../foundry/finetune/ModelShape.js";
import {
    type FinetuneTrainingOptions,
    type FinetuneTrainingReport,
    trainWithLlamaFinetune
} from "../../foundry/finetune/trainWithLlamaFinetune.js";
import {checkOutputFile} from "../checkOutputPath.js";
import {requiredText} from "../textOptions.js";

/** Raw option values as commander hands them over. */
export interface TrainCommandOptions {
    readonly corpus?: string;
    readonly out?: string;
    readonly shape?: string;
    readonly context?: string;
    readonly epochs?: string;
    readonly steps?: string;
    readonly seconds?: string;
    readonly seed?: string;
    readonly learningRate?: string;
    readonly minLearningRate?: string;
    readonly weightDecay?: string;
    readonly threads?: string;
    readonly from?: string;
    readonly name?: string;
}

function positiveNumber(text: string | undefined, flag: string): number | undefined {
    if (text === undefined) return undefined;
    const value = Number(text);
    if (text.trim() === "" || !Number.isFinite(value) || value <= 0)
        throw new InvalidInputError(`expected a positive number, got "${text}"`, flag);
    return value;
}

function positiveInteger(text: string | undefined, flag: string): number | undefined {
    const value = positiveNumber(text, flag);
    if (value !== undefined && !Number.isSafeInteger(value))
        throw new InvalidInputError(`expected a positive integer, got "${text}"`, flag);
    return value;
}

/** Checks every flag (InvalidInputError naming it) and returns the trainer's options; nothing runs yet. */
export function parseTrainOptions(options: TrainCommandOptions): Omit<FinetuneTrainingOptions, "onProgress" | "onMessage"> {
    const corpus = requiredText(options.corpus, "--corpus");
    const out = requiredText(options.out, "--out");
    if (!out.endsWith(".gguf")) throw new InvalidInputError(`expected a .gguf path, got "${out}"`, "--out");
    const shape = parseModelShape(requiredText(options.shape, "--shape"), "--shape");
    const steps = positiveInteger(options.steps, "--steps");
    const seconds = positiveNumber(options.seconds, "--seconds");
    if (steps !== undefined && seconds !== undefined) throw new InvalidInputError("give --steps or --seconds, not both", "--steps");
    const contextLength = positiveInteger(options.context, "--context");
    if (contextLength !== undefined && (contextLength < 8 || contextLength % 2 !== 0))
        throw new InvalidInputError(`expected an even number >= 8, got ${contextLength}`, "--context");
    const learningRate = positiveNumber(options.learningRate, "--learning-rate");
    const minimumLearningRate = positiveNumber(options.minLearningRate, "--min-learning-rate");
    if (minimumLearningRate !== undefined && minimumLearningRate > (learningRate ?? 6e-4))
        throw new InvalidInputError("must not exceed --learning-rate", "--min-learning-rate");
    const weightDecay = options.weightDecay === undefined ? undefined : Number(options.weightDecay);
    if (weightDecay !== undefined && !(weightDecay >= 0 && Number.isFinite(weightDecay)))
        throw new InvalidInputError(`expected a number >= 0, got "${options.weightDecay}"`, "--weight-decay");
    const seed = options.seed === undefined ? undefined : Number(options.seed);
    if (seed !== undefined && (!Number.isSafeInteger(seed) || seed < 0))
        throw new InvalidInputError(`expected an integer >= 0, got "${options.seed}"`, "--seed");
    return {
        corpus,
        out,
        shape,
        contextLength,
        steps,
        seconds,
        seed,
        learningRate,
        minimumLearningRate,
        weightDecay,
        epochs: positiveInteger(options.epochs, "--epochs"),
        threads: positiveInteger(options.threads, "--threads"),
        initialModel: options.from,
        name: options.name
    };
}

/** `specgate train` without the terminal: validates, trains, returns the report; messages go to `log`. */
export async function runTrain(
    options: TrainCommandOptions,
    log: (line: string) => void = () => undefined
): Promise<FinetuneTrainingReport> {
    const parsed = parseTrainOptions(options);
    await checkOutputFile(parsed.out, "--out");
    let lastLogged = 0;
    return trainWithLlamaFinetune({
        ...parsed,
        onMessage: log,
        onProgress: (progress, epoch) => {
            const now = performance.now();
            if (progress.done !== progress.total && now - lastLogged < 10_000) return;
            lastLogged = now;
            log(
                `epoch ${epoch + 1} ${progress.phase} ${progress.done}/${progress.total} loss ${progress.loss.toFixed(4)} accuracy ${(100 * progress.accuracy).toFixed(1)}%`
            );
        }
    });
}

/** `specgate train`: train a randomly initialised llama model on a corpus with llama.cpp's llama-finetune. */
export function registerTrainCommand(program: Command): void {
    program
        .command("train")
        .description(
            "train a llama-architecture GGUF from scratch on a `specgate corpus` directory with llama.cpp's llama-finetune (build it with scripts/buildLlamaCppTools.sh)"
        )
        .option("--corpus <DIR>", "corpus directory (train.txt, validation.txt, manifest.json)")
        .option("--out <MODEL.gguf>", "trained F32 GGUF; a report is written to MODEL.gguf.train.json")
        .option("--shape <d,layers,heads,ff>", "model shape, e.g. 256,4,4,768")
        .option("--context <N>", "tokens per training window and context length (default 256)")
        .option("--epochs <N>", "passes over the training text; the learning rate decays once per epoch (default 1)")
        .option("--steps <N>", "optimizer steps in all, one per window (the training documents are cycled or cut to fit)")
        .option("--seconds <S>", "wall-clock budget: a calibration run measures throughput and sizes the run")
        .option("--seed <S>", "seed of the initial weights (default 1)")
        .option("--learning-rate <LR>", "AdamW learning rate of the first epoch (default 6e-4)")
        .option("--min-learning-rate <LR>", "learning rate of the last epoch (default learning rate / 10)")
        .option("--weight-decay <WD>", "AdamW weight decay (default 0.01)")
        .option("--threads <N>", "CPU threads for llama-finetune (default 2)")
        .option("--from <MODEL.gguf>", "continue from this model (same shape) instead of random weights")
        .option("--name <NAME>", "general.name of the written model")
        .action(async (options: TrainCommandOptions) => {
            const report = await runTrain(options, (line) => process.stderr.write(`${line}\n`));
            process.stdout.write(
                `${report.model}: ${report.parameters} parameters, ${report.steps} steps, ${report.tokensProcessed} tokens in ${report.wallSeconds.toFixed(0)} s ` +
                    `(${report.tokensPerSecond.toFixed(0)} tokens/s training), validation loss ${report.finalValidationLoss?.toFixed(4) ?? "n/a"}\n`
            );
        });
}
