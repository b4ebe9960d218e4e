import type {Command} from "commander";
import {InvalidInputError} from "../../errors.js";
import {corpusMixturePresets} from "../../foundry/corpus/CorpusMixture.js";
import {
    defaultEagle3Settings,
    type Eagle3TrainingOptions,
    type Eagle3TrainingReport,
    trainEagle3
} from "../../foundry/eagle3/trainEagle3.js";
import {checkOutputFile} from "../checkOutputPath.js";
import {interruptSignal, reportOnInterrupt} from "../interrupts.js";
import {nonNegativeDecimal, positiveInteger, requiredText} from "../textOptions.js";

/** Raw option values as commander hands them over. */
export interface TrainEagle3CommandOptions {
    readonly target?: string;
    readonly out?: string;
    readonly work?: string;
    readonly prompts?: string;
    readonly mixture?: string;
    readonly corpusSeed?: string;
    readonly temperatures?: string;
    readonly maxTokens?: string;
    readonly layers?: string;
    readonly ff?: string;
    readonly unrolledSteps?: string;
    readonly batch?: string;
    readonly learningRate?: string;
    readonly steps?: string;
    readonly seconds?: string;
    readonly seed?: string;
    readonly init?: string;
    readonly threads?: string;
    readonly checkpointSeconds?: string;
    readonly name?: string;
}

function positiveDecimal(text: string | undefined, flag: string, fallback: number): number {
    const value = nonNegativeDecimal(text, flag, fallback);
    if (!(value > 0)) throw new InvalidInputError("must be positive", flag);
    return value;
}

function layerIds(text: string | undefined): readonly [number, number, number] | undefined {
    if (text === undefined) return undefined;
    const ids = text.split(",").map((part) => part.trim());
    if (ids.length !== 3 || ids.some((id) => !/^\d+$/.test(id)))
        throw new InvalidInputError(`expected three comma-separated layer ids such as 1,2,3, got "${text}"`, "--layers");
    return [Number(ids[0]), Number(ids[1]), Number(ids[2])];
}

function temperatures(text: string | undefined): number[] {
    if (text === undefined) return [...defaultEagle3Settings.data.temperatures];
    const values = text.split(",").map((part) => nonNegativeDecimal(part.trim(), "--temperatures", 0));
    if (values.length === 0 || values.some((value) => value > 2))
        throw new InvalidInputError(`expected temperatures in [0, 2], got "${text}"`, "--temperatures");
    return values;
}

function initialization(text: string | undefined): "target" | "random" {
    if (text === undefined) return defaultEagle3Settings.initialization;
    if (text !== "target" && text !== "random") throw new InvalidInputError(`expected target or random, got "${text}"`, "--init");
    return text;
}

/** Checks every flag (InvalidInputError naming it) and returns the trainer's options; nothing runs yet. */
export function parseTrainEagle3Options(options: TrainEagle3CommandOptions): Omit<Eagle3TrainingOptions, "onMessage"> {
    const target = requiredText(options.target, "--target");
    const out = requiredText(options.out, "--out");
    if (!out.endsWith(".gguf")) throw new InvalidInputError(`expected a .gguf path, got "${out}"`, "--out");
    const steps = options.steps === undefined ? undefined : positiveInteger(options.steps, "--steps", 1);
    const seconds = options.seconds === undefined ? undefined : positiveDecimal(options.seconds, "--seconds", 1);
    if (steps !== undefined && seconds !== undefined) throw new InvalidInputError("give --steps or --seconds, not both", "--steps");
    if (steps === undefined && seconds === undefined) throw new InvalidInputError("give --steps or --seconds", "--steps");
    const mixture = options.mixture ?? defaultEagle3Settings.data.mixture;
    if (corpusMixturePresets[mixture] === undefined)
        throw new InvalidInputError(`unknown mixture "${mixture}"; one of ${Object.keys(corpusMixturePresets).join(", ")}`, "--mixture");
    const defaults = defaultEagle3Settings;
    const layers = layerIds(options.layers);
    const ff = options.ff === undefined ? undefined : positiveInteger(options.ff, "--ff", 1);
    return {
        target,
        out,
        work: options.work ?? ".tmp/eagle3",
        steps,
        seconds,
        threads: positiveInteger(options.threads, "--threads", 1),
        checkpointSeconds: positiveDecimal(options.checkpointSeconds, "--checkpoint-seconds", 120),
        name: options.name,
        settings: {
            ...defaults,
            data: {
                ...defaults.data,
                corpusSeed: positiveInteger(options.corpusSeed, "--corpus-seed", defaults.data.corpusSeed),
                mixture,
                prompts: positiveInteger(options.prompts, "--prompts", defaults.data.prompts),
                temperatures: temperatures(options.temperatures),
                maxTokens: positiveInteger(options.maxTokens, "--max-tokens", defaults.data.maxTokens)
            },
            shape: {...(layers === undefined ? {} : {targetLayers: layers}), ...(ff === undefined ? {} : {feedForwardLength: ff})},
            unrolledSteps: positiveInteger(options.unrolledSteps, "--unrolled-steps", defaults.unrolledSteps),
            batchSize: positiveInteger(options.batch, "--batch", defaults.batchSize),
            learningRate: positiveDecimal(options.learningRate, "--learning-rate", defaults.learningRate),
            initialization: initialization(options.init),
            seed: positiveInteger(options.seed, "--seed", defaults.seed)
        }
    };
}

/** `specgate train-eagle3` without the terminal: validates, trains, returns the report; messages go to `log`. */
export async function runTrainEagle3(
    options: TrainEagle3CommandOptions,
    log: (line: string) => void = () => undefined
): Promise<Eagle3TrainingReport> {
    const parsed = parseTrainEagle3Options(options);
    await checkOutputFile(parsed.out, "--out");
    let done = "no step";
    const unregister = reportOnInterrupt(() => `${done} done, checkpoint in ${parsed.work}; rerun the same command to resume`);
    // Left registered when the run stops on a signal: the interruption message says where it stopped.
    const report = await trainEagle3({
        ...parsed,
        signal: interruptSignal(),
        onStep: (step, total) => (done = `step ${step} of ${total}`),
        onMessage: log
    });
    unregister();
    return report;
}

/** `specgate train-eagle3`: train an EAGLE-3 head for a llama target on the target's own generations. */
export function registerTrainEagle3Command(program: Command): void {
    program
        .command("train-eagle3")
        .description(
            "train an EAGLE-3 draft head for a llama GGUF target on its own continuations of corpus prompts, exported in llama.cpp's eagle3 GGUF format (--spec-type draft-eagle3)"
        )
        .option("--target <MODEL.gguf>", "the llama target the head drafts for")
        .option("--out <HEAD.gguf>", "the head (F32); a report is written to HEAD.gguf.train.json")
        .option("--work <DIR>", "scratch folder: the target's generations and the checkpoint a rerun resumes from", ".tmp/eagle3")
        .option(
            "--prompts <N>",
            `training prompts from the corpus's train split (default ${defaultEagle3Settings.data.prompts}; the last 5% validate)`
        )
        .option("--mixture <NAME>", `corpus mixture preset (default ${defaultEagle3Settings.data.mixture})`)
        .option("--corpus-seed <S>", `corpus seed (default ${defaultEagle3Settings.data.corpusSeed}, the family's)`)
        .option("--temperatures <T,...>", "the target continues every prompt once at each (default 0,1)")
        .option("--max-tokens <N>", `tokens per continuation (default ${defaultEagle3Settings.data.maxTokens}; the context also caps it)`)
        .option("--layers <a,b,c>", "target layer ids whose inputs feed the head (default 1, n/2, n-1)")
        .option("--ff <N>", "the head's feed-forward size (default the target's)")
        .option(
            "--unrolled-steps <K>",
            `drafting steps trained per position, the head feeding itself after the first (default ${defaultEagle3Settings.unrolledSteps})`
        )
        .option("--batch <N>", `sequences per optimizer step (default ${defaultEagle3Settings.batchSize})`)
        .option("--learning-rate <LR>", `peak AdamW learning rate (default ${defaultEagle3Settings.learningRate})`)
        .option("--steps <N>", "optimizer steps (a rerun resuming a checkpoint sets the total anew)")
        .option("--seconds <S>", "training-time budget instead of --steps: the step count is sized after the first steps")
        .option(
            "--init <target|random>",
            "start from the target's last extracted block, embeddings and LM head (default), or from random weights"
        )
        .option("--seed <S>", "seed of the initial weights and the data order (default 1)")
        .option("--threads <N>", "CPU threads of the target while it generates (default 1)")
        .option("--checkpoint-seconds <S>", "seconds between checkpoints (default 120)")
        .option("--name <NAME>", "general.name of the written head")
        .action(async (options: TrainEagle3CommandOptions) => {
            const report = await runTrainEagle3(options, (line) => process.stderr.write(`${line}\n`));
            const v = report.validation;
            process.stdout.write(
                `${report.model}: ${report.parameters} parameters, ${report.steps} steps in ${report.trainingSeconds.toFixed(0)} s; ` +
                    `validation step accuracy ${v.stepAccuracy.map((a) => `${(100 * a).toFixed(1)}%`).join(" / ")}, ` +
                    `chain acceptance at γ = ${v.stepAccuracy.length} ${(100 * v.chainAcceptance).toFixed(1)}%\n`
            );
        });
}
