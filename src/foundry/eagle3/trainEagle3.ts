import {mkdir, stat} from "node:fs/promises";
import {join} from "node:path";
import {loadModelBackend} from "../../backend/loadModelBackend.js";
import {CheckpointError, InvalidInputError} from "../../errors.js";
import {ByteTokenizer} from "../../gguf/ByteTokenizer.js";
import {writeFileAtomic} from "../../io/writeFileAtomic.js";
import {Random} from "../../random/Random.js";
import {headDimension} from "../model/LlamaConfig.js";
import {readLlamaGguf} from "../model/readLlamaGguf.js";
import {RopeTable} from "../model/RopeTable.js";
import {adamWUpdate} from "../training/adamWUpdate.js";
import {clipGradientNorm} from "../training/clipGradientNorm.js";
import {learningRateAt} from "../training/learningRateAt.js";
import type {TrainingOptions} from "../training/TrainingOptions.js";
import type {TargetGeneration} from "./collectTargetGenerations.js";
import {type Eagle3Config, eagle3HeadDimension} from "./Eagle3Config.js";
import {loadEagle3Checkpoint, saveEagle3Checkpoint} from "./eagle3Checkpoint.js";
import type {Eagle3Example} from "./Eagle3Example.js";
import {type Eagle3DataRecipe, eagle3Generations} from "./eagle3Generations.js";
import {eagle3LossAndGradients} from "./eagle3LossAndGradients.js";
import {eagle3TensorLayout} from "./eagle3TensorLayout.js";
import {type Eagle3Weights, zeroEagle3Weights} from "./Eagle3Weights.js";
import {type Eagle3Evaluation, evaluateEagle3Head} from "./evaluateEagle3Head.js";
import {type Eagle3HeadShape, familyEagle3Config} from "./familyEagle3Config.js";
import {initializeEagle3FromTarget} from "./initializeEagle3FromTarget.js";
import {initializeEagle3Weights} from "./initializeEagle3Weights.js";
import {targetFeatures} from "./targetFeatures.js";
import {writeEagle3Gguf} from "./writeEagle3Gguf.js";

export interface Eagle3TrainingSettings {
    readonly data: Eagle3DataRecipe;
    readonly shape: Eagle3HeadShape;
    /** Drafting steps unrolled per training sequence (the training-time test). */
    readonly unrolledSteps: number;
    readonly stepDecay: number;
    /** Sequences per optimizer step. */
    readonly batchSize: number;
    readonly learningRate: number;
    readonly minimumLearningRateRatio: number;
    readonly warmupSteps: number;
    readonly weightDecay: number;
    readonly gradientClip: number;
    /**
     * "target": the head starts as the target's last extracted block with its embeddings and LM head
     * (initializeEagle3FromTarget); "random": seeded random weights.
     */
    readonly initialization: "target" | "random";
    /** Seed of the initial weights and of the epoch shuffles. */
    readonly seed: number;
    /** Share of the prompts (the last ones) held out for validation. */
    readonly validationFraction: number;
}

export interface Eagle3TrainingOptions {
    readonly target: string;
    readonly out: string;
    /** Scratch folder: the generations cache and the checkpoint. */
    readonly work: string;
    readonly settings: Eagle3TrainingSettings;
    /**
     * Optimizer steps; or `seconds`, a training-time budget the step count is sized to after a few
     * steps. Resuming with `steps` sets the run's total anew (the cosine schedule stretches or shrinks).
     */
    readonly steps?: number;
    readonly seconds?: number;
    /** CPU threads of the target while it generates. */
    readonly threads: number;
    readonly checkpointSeconds: number;
    readonly name?: string;
    /** Stops the run between steps, after saving a checkpoint; the abort reason is thrown. */
    readonly signal?: AbortSignal;
    /** Called after every step with the steps done and the run's total. */
    readonly onStep?: (step: number, totalSteps: number) => void;
    readonly onMessage?: (line: string) => void;
}

export interface Eagle3TrainingReport {
    readonly format: "specgate-eagle3-train/1";
    readonly model: string;
    readonly target: string;
    readonly config: Eagle3Config;
    readonly parameters: number;
    readonly settings: Eagle3TrainingSettings;
    readonly data: {
        readonly sequences: number;
        readonly trainSequences: number;
        readonly validationSequences: number;
        readonly tokens: number;
        readonly generatedTokens: number;
        readonly generationSeconds: number;
    };
    readonly steps: number;
    readonly sequencesSeen: number;
    readonly trainingSeconds: number;
    /** Mean training loss of the last tenth of the steps. */
    readonly finalTrainLoss: number;
    readonly validation: Eagle3Evaluation;
}

export const defaultEagle3Settings: Eagle3TrainingSettings = {
    data: {corpusSeed: 7, mixture: "balanced", prompts: 1200, temperatures: [0, 1], maxTokens: 128, seed: 1},
    shape: {},
    unrolledSteps: 4,
    stepDecay: 0.8,
    batchSize: 4,
    learningRate: 2e-3,
    minimumLearningRateRatio: 0.05,
    warmupSteps: 20,
    weightDecay: 0.01,
    gradientClip: 1,
    initialization: "target",
    seed: 1,
    validationFraction: 0.05
};

/**
 * Trains an EAGLE-3 head for a llama target on the target's own generations: features from the
 * reference forward pass of the target (targetFeatures), the loss over `unrolledSteps` drafting steps
 * (eagle3LossAndGradients), AdamW with warm-up and cosine decay. Checkpoints every
 * checkpointSeconds to `work`, and a rerun with the same settings resumes there (the last checkpoint
 * is kept, so a finished run can be trained on with a larger `steps`). Writes the head
 * (writeEagle3Gguf, F32) and OUT.train.json.
 */
export async function trainEagle3(options: Eagle3TrainingOptions): Promise<Eagle3TrainingReport> {
    const log = options.onMessage ?? (() => undefined);
    const settings = options.settings;
    if (options.steps === undefined && options.seconds === undefined) throw new InvalidInputError("give steps or seconds", "steps");
    await mkdir(options.work, {recursive: true});
    const {config: targetConfig, weights: targetWeights} = readLlamaGguf(options.target);
    const config = familyEagle3Config(targetConfig, settings.shape);
    const {generations, seconds: generationSeconds} = await eagle3Generations(
        () => loadModelBackend(options.target, {threads: options.threads}),
        settings.data,
        join(options.work, "generations.jsonl"),
        progressLogger(log, "generating")
    );
    const validationPrompts = Math.max(1, Math.round(settings.data.prompts * settings.validationFraction));
    const perPrompt = settings.data.temperatures.length;
    const split = generations.length - validationPrompts * perPrompt;
    const train = generations.slice(0, split).filter((generation) => generation.tokens.length >= 3);
    const validation = generations.slice(split).filter((generation) => generation.tokens.length >= 3);
    if (train.length === 0) throw new InvalidInputError("no training sequences", "prompts");
    log(
        `${train.length} training and ${validation.length} validation sequences, ${generations.reduce((n, g) => n + g.tokens.length, 0)} tokens`
    );

    const targetRope = new RopeTable(targetConfig.contextLength, headDimension(targetConfig), targetConfig.ropeFreqBase);
    const rope = new RopeTable(config.contextLength + settings.unrolledSteps, eagle3HeadDimension(config), config.ropeFreqBase);
    // Drafting starts at root promptTokens − 1 (the pair of the target's first generated token and its
    // features at the prompt's last position); roots before it train step 0 alone.
    const chainStartOf = (generation: TargetGeneration): number => Math.max(0, generation.promptTokens - 1);
    const exampleOf = (generation: TargetGeneration): Eagle3Example => ({
        tokens: generation.tokens,
        chainStart: chainStartOf(generation),
        features: targetFeatures(targetConfig, targetWeights, targetRope, generation.tokens, config.targetLayers)
    });

    const checkpointPath = join(options.work, "checkpoint.bin");
    const initial = (): Eagle3Weights =>
        settings.initialization === "target"
            ? initializeEagle3FromTarget(config, targetConfig, targetWeights, settings.seed)
            : initializeEagle3Weights(config, {seed: settings.seed});
    const state = await resumeOrStart(checkpointPath, config, settings, options.steps ?? 0, initial, log);
    const trainingOptions = (totalSteps: number): TrainingOptions => ({
        seed: settings.seed,
        learningRate: settings.learningRate,
        warmupSteps: settings.warmupSteps,
        totalSteps,
        minimumLearningRateRatio: settings.minimumLearningRateRatio,
        weightDecay: settings.weightDecay,
        beta1: 0.9,
        beta2: 0.95,
        epsilon: 1e-8,
        gradientClip: settings.gradientClip,
        batchSize: settings.batchSize,
        sequenceLength: config.contextLength
    });
    const isMatrix = (name: string): boolean => eagle3TensorLayout(config).find((shape) => shape.name === name)!.rows > 1;
    const order = new EpochOrder(train.length, settings.seed);
    const losses: number[] = [];
    let lastSaved = performance.now();
    let lastLogged = performance.now();
    const sessionStart = performance.now();
    const sessionFirstStep = state.step;
    while (state.totalSteps === 0 || state.step < state.totalSteps) {
        // A step computes for seconds without yielding; between steps, signals get their turn.
        await new Promise((resolve) => setImmediate(resolve));
        if (options.signal?.aborted) {
            await saveState(checkpointPath, config, settings, state);
            throw options.signal.reason;
        }
        const stepStart = performance.now();
        const batch = Array.from({length: settings.batchSize}, (_unused, i) =>
            exampleOf(train[order.at(state.step * settings.batchSize + i)])
        );
        const result = eagle3LossAndGradients(config, state.weights, rope, batch, {
            unrolledSteps: settings.unrolledSteps,
            stepDecay: settings.stepDecay
        });
        clipGradientNorm(result.gradients, settings.gradientClip);
        const totalForSchedule =
            state.totalSteps === 0 ? estimateTotal(options.seconds!, state, sessionStart, sessionFirstStep) : state.totalSteps;
        const learningRate = learningRateAt(state.step, trainingOptions(totalForSchedule));
        adamWUpdate(
            state.weights,
            result.gradients,
            state.moments,
            state.step + 1,
            learningRate,
            trainingOptions(totalForSchedule),
            isMatrix
        );
        state.step++;
        state.trainingSeconds += (performance.now() - stepStart) / 1000;
        options.onStep?.(state.step, state.totalSteps);
        losses.push(result.loss);
        if (state.totalSteps === 0 && state.step - sessionFirstStep >= 5) {
            state.totalSteps = Math.max(state.step + 1, estimateTotal(options.seconds!, state, sessionStart, sessionFirstStep));
            log(`sized to ${state.totalSteps} steps for ${options.seconds} s`);
        }
        const now = performance.now();
        if (now - lastLogged > 30_000 || state.step === state.totalSteps) {
            lastLogged = now;
            const accuracy = result.steps.map((step) => `${((100 * step.correct) / Math.max(1, step.rows)).toFixed(0)}%`).join("/");
            log(
                `step ${state.step}/${state.totalSteps} loss ${result.loss.toFixed(4)} lr ${learningRate.toExponential(2)} step accuracy ${accuracy}`
            );
        }
        if (now - lastSaved > options.checkpointSeconds * 1000) {
            lastSaved = now;
            await saveState(checkpointPath, config, settings, state);
        }
    }
    await saveState(checkpointPath, config, settings, state);

    log("validating");
    const validationExamples = validation.map(exampleOf);
    const evaluation = evaluateEagle3Head(
        config,
        state.weights,
        rope,
        validationExamples,
        validation.map(chainStartOf),
        settings.unrolledSteps
    );
    await writeEagle3Gguf(options.out, config, state.weights, new ByteTokenizer(), {name: options.name ?? "specgate-eagle3"});
    const tail = losses.slice(-Math.max(1, Math.floor(losses.length / 10)));
    const report: Eagle3TrainingReport = {
        format: "specgate-eagle3-train/1",
        model: options.out,
        target: options.target,
        config,
        parameters: eagle3TensorLayout(config).reduce((sum, shape) => sum + shape.rows * shape.columns, 0),
        settings,
        data: {
            sequences: generations.length,
            trainSequences: train.length,
            validationSequences: validation.length,
            tokens: generations.reduce((sum, generation) => sum + generation.tokens.length, 0),
            generatedTokens: generations.reduce((sum, generation) => sum + generation.tokens.length - generation.promptTokens, 0),
            generationSeconds
        },
        steps: state.step,
        sequencesSeen: state.step * settings.batchSize,
        trainingSeconds: state.trainingSeconds,
        finalTrainLoss: tail.reduce((sum, value) => sum + value, 0) / tail.length,
        validation: evaluation
    };
    await writeFileAtomic(`${options.out}.train.json`, `${JSON.stringify(report, null, 2)}\n`);
    return report;
}

interface RunState {
    readonly weights: Eagle3Weights;
    readonly moments: {readonly first: Eagle3Weights; readonly second: Eagle3Weights};
    step: number;
    totalSteps: number;
    trainingSeconds: number;
}

async function resumeOrStart(
    path: string,
    config: Eagle3Config,
    settings: Eagle3TrainingSettings,
    steps: number,
    initial: () => Eagle3Weights,
    log: (line: string) => void
): Promise<RunState> {
    if (await exists(path)) {
        const snapshot = await loadEagle3Checkpoint(path);
        if (JSON.stringify(snapshot.settings) !== JSON.stringify(settings) || JSON.stringify(snapshot.config) !== JSON.stringify(config))
            throw new CheckpointError("mismatch", `${path} belongs to a run with other settings; remove it to start afresh`, "work");
        // A rerun given --steps sets the run's length anew (longer, or shorter but not below what is done).
        const totalSteps = steps > 0 ? Math.max(snapshot.step, steps) : snapshot.totalSteps;
        log(`resuming at step ${snapshot.step}/${totalSteps}`);
        return {
            weights: snapshot.weights,
            moments: {first: snapshot.first, second: snapshot.second},
            step: snapshot.step,
            totalSteps,
            trainingSeconds: snapshot.trainingSeconds
        };
    }
    return {
        weights: initial(),
        moments: {first: zeroEagle3Weights(config), second: zeroEagle3Weights(config)},
        step: 0,
        totalSteps: steps,
        trainingSeconds: 0
    };
}

function saveState(path: string, config: Eagle3Config, settings: Eagle3TrainingSettings, state: RunState): Promise<void> {
    return saveEagle3Checkpoint(path, {
        config,
        settings,
        step: state.step,
        totalSteps: state.totalSteps,
        trainingSeconds: state.trainingSeconds,
        weights: state.weights,
        first: state.moments.first,
        second: state.moments.second
    });
}

/** Steps that fit `seconds` of training at this session's pace so far. */
function estimateTotal(seconds: number, state: RunState, sessionStart: number, sessionFirstStep: number): number {
    const done = state.step - sessionFirstStep;
    if (done === 0) return Math.max(state.step + 1, 1000);
    const perStep = (performance.now() - sessionStart) / 1000 / done;
    return Math.max(state.step + 1, Math.floor(state.step + (seconds - state.trainingSeconds) / perStep));
}

/** Sequence indices epoch after epoch, each epoch a seeded shuffle: position n is the same on resume. */
class EpochOrder {
    private epoch = -1;
    private permutation: number[] = [];

    public constructor(
        private readonly count: number,
        private readonly seed: number
    ) {}

    public at(position: number): number {
        const epoch = Math.floor(position / this.count);
        if (epoch !== this.epoch) {
            this.epoch = epoch;
            const random = new Random(this.seed * 1000 + epoch);
            this.permutation = Array.from({length: this.count}, (_unused, i) => i);
            for (let i = this.count - 1; i > 0; i--) {
                const j = Math.floor(random.nextDouble() * (i + 1));
                [this.permutation[i], this.permutation[j]] = [this.permutation[j], this.permutation[i]];
            }
        }
        return this.permutation[position % this.count];
    }
}

function progressLogger(log: (line: string) => void, what: string): (done: number, total: number) => void {
    let last = 0;
    return (done, total) => {
        const now = performance.now();
        if (done !== total && now - last < 30_000) return;
        last = now;
        log(`${what} ${done}/${total}`);
    };
}

async function exists(path: string): Promise<boolean> {
    try {
        await stat(path);
        return true;
    } catch {
        return false;
    }
}
