import {spawn} from "node:child_process";
import {SpecgateError} from "../../errors.js";
import {type FinetuneProgress, parseFinetuneProgress} from "./parseFinetuneProgress.js";

export interface LlamaFinetuneArguments {
    /** The llama-finetune binary. */
    readonly binary: string;
    /** An F32 GGUF to start from (llama-finetune trains F32 weights only). */
    readonly model: string;
    readonly textFile: string;
    readonly output: string;
    readonly contextLength: number;
    /** Tokens per physical batch (--ubatch-size); must divide contextLength. */
    readonly microBatch: number;
    readonly epochs: number;
    readonly learningRate: number;
    /** Exponential decay to this learning rate over the epochs (llama-finetune changes it once per epoch). */
    readonly minimumLearningRate: number;
    readonly weightDecay: number;
    readonly validationSplit: number;
    readonly threads: number;
    readonly seed: number;
    /** Default adamw; sgd (with weight decay 0, one window) makes a step read back as −learning rate × gradient. */
    readonly optimizer?: "adamw" | "sgd";
}

export interface EpochSummary {
    readonly epoch: number;
    readonly train: FinetuneProgress;
    readonly validation?: FinetuneProgress;
    /**
     * Windows per second of each phase, timed here between its first and last progress report
     * (llama-finetune's own clock has 1 s resolution, too coarse for short runs).
     */
    readonly trainWindowsPerSecond?: number;
    readonly validationWindowsPerSecond?: number;
}

export interface LlamaFinetuneRun {
    readonly epochs: EpochSummary[];
    readonly wallSeconds: number;
    /** The last lines of stderr that were not progress reports, for error messages and logs. */
    readonly log: string[];
}

export interface LlamaFinetuneHooks {
    /** Every progress report, as it arrives (several per second). */
    readonly onProgress?: (progress: FinetuneProgress, epoch: number) => void;
    /** Ends the child (SIGTERM) when aborted. */
    readonly signal?: AbortSignal;
}

/** llama-finetune exited with a failure; the message carries the tail of its log. */
export class LlamaFinetuneFailedError extends SpecgateError {
    public constructor(message: string) {
        super("llama_finetune_failed", message);
    }
}

/** The command line for the bundled llama.cpp's llama-finetune (flags checked against its --help). */
export function llamaFinetuneCommandLine(options: LlamaFinetuneArguments): string[] {
    return [
        "--model",
        options.model,
        "--file",
        options.textFile,
        "--output-file",
        options.output,
        "--ctx-size",
        String(options.contextLength),
        "--batch-size",
        String(options.contextLength),
        "--ubatch-size",
        String(options.microBatch),
        "--threads",
        String(options.threads),
        "--n-gpu-layers",
        "0",
        "--seed",
        String(options.seed),
        "--optimizer",
        options.optimizer ?? "adamw",
        "--epochs",
        String(options.epochs),
        "--learning-rate",
        String(options.learningRate),
        "--learning-rate-min",
        String(options.minimumLearningRate),
        "--weight-decay",
        String(options.weightDecay),
        "--val-split",
        String(options.validationSplit)
    ];
}

/**
 * The environment llama-finetune runs in. SPECGATE_TRAIN_WITHOUT_KV_CACHE switches on
 * scripts/llama-finetune-training-graph.patch: without it attention reads keys and values back from
 * the KV cache, the backward pass cannot see through the cache, and attn_k/attn_v never learn.
 * Correct because every window is one physical batch (--ubatch-size = --ctx-size).
 */
export function llamaFinetuneEnvironment(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    return {...base, SPECGATE_TRAIN_WITHOUT_KV_CACHE: "1"};
}

/**
 * Spawns llama-finetune and follows its progress bar on stderr. Epochs are counted from the
 * progress itself: a training report whose window count falls back starts a new epoch.
 */
export function runLlamaFinetune(options: LlamaFinetuneArguments, hooks: LlamaFinetuneHooks = {}): Promise<LlamaFinetuneRun> {
    const started = performance.now();
    const child = spawn(options.binary, llamaFinetuneCommandLine(options), {
        stdio: ["ignore", "ignore", "pipe"],
        signal: hooks.signal,
        env: llamaFinetuneEnvironment(process.env)
    });
    const epochs: EpochSummary[] = [];
    const log: string[] = [];
    let pending = "";
    let epoch = -1;
    let lastTrainDone = Number.POSITIVE_INFINITY;
    let phaseStart = {phase: "", done: 0, at: 0};
    const rate = (progress: FinetuneProgress): number | undefined => {
        const now = performance.now();
        if (phaseStart.phase !== progress.phase || progress.done < phaseStart.done) {
            phaseStart = {phase: progress.phase, done: progress.done, at: now};
            return undefined;
        }
        return now > phaseStart.at ? (progress.done - phaseStart.done) / ((now - phaseStart.at) / 1000) : undefined;
    };
    const consume = (line: string): void => {
        const progress = parseFinetuneProgress(line);
        if (progress === null) {
            if (line.trim() !== "") log.push(line.trim());
            if (log.length > 60) log.shift();
            return;
        }
        const windowsPerSecond = rate(progress);
        if (progress.phase === "train") {
            if (progress.done < lastTrainDone) {
                epoch++;
                epochs.push({epoch, train: progress});
            }
            lastTrainDone = progress.done;
            epochs[epoch] = {
                ...epochs[epoch],
                train: progress,
                trainWindowsPerSecond: windowsPerSecond ?? epochs[epoch].trainWindowsPerSecond
            };
        } else if (epoch >= 0) {
            epochs[epoch] = {
                ...epochs[epoch],
                validation: progress,
                validationWindowsPerSecond: windowsPerSecond ?? epochs[epoch].validationWindowsPerSecond
            };
        }
        hooks.onProgress?.(progress, Math.max(epoch, 0));
    };
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
        const lines = (pending + chunk).split(/[\r\n]/);
        pending = lines.pop() ?? "";
        lines.forEach(consume);
    });
    return new Promise((resolvePromise, reject) => {
        child.on("error", (error) => reject(new LlamaFinetuneFailedError(`could not run ${options.binary}: ${error.message}`)));
        child.on("close", (code, signal) => {
            consume(pending);
            const wallSeconds = (performance.now() - started) / 1000;
            if (code !== 0)
                reject(new LlamaFinetuneFailedError(`llama-finetune exited with ${code ?? signal}:\n${log.slice(-15).join("\n")}`));
            else if (epochs.length === 0)
                reject(new LlamaFinetuneFailedError(`llama-finetune reported no training progress:\n${log.slice(-15).join("\n")}`));
            else resolvePromise({epochs, wallSeconds, log});
        });
    });
}
