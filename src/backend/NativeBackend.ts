import type {SamplingOptions} from "../distributions/SamplingOptions.js";
import {InvalidDistributionError, InvalidInputError, ModelLoadError} from "../errors.js";
import type {BackendSequence, BackendTimings, EvaluatedDistributions, EvaluateOptions, EvaluationSplit, ModelBackend} from "./ModelBackend.js";
import {backendSizes, positiveInteger} from "./backendSizes.js";
import {checkEvaluation, checkRollback, checkToken} from "./checkEvaluation.js";
import {type NativeContextHandle, type NativeModelHandle, nativeAddon, NativeOutputMode, type NativeSampling} from "./nativeAddon.js";
import {OperationQueue} from "./OperationQueue.js";
import {readModelHeader} from "./readModelHeader.js";
import {describeVocabulary, type VocabularyDescription} from "./VocabularyDescription.js";
import {vocabularyIdentity} from "./vocabularyIdentity.js";

export interface NativeBackendOptions {
    /** CPU threads per evaluation (contexts with the same count share one persistent ggml threadpool). Default 1. */
    readonly threads?: number;
    /** Tokens per sequence. Default: the model's context length, capped at 4096. */
    readonly contextSize?: number;
    /** Most tokens in one llama_decode call. Default: contextSize, so an evaluate is one call. */
    readonly batchSize?: number;
    /** Contexts kept for reuse after their sequence is disposed. Default 64; 0 frees each at once. */
    readonly maxIdleSequences?: number;
    /**
     * Evaluations of at most 8 tokens whose recent native cost is below this many milliseconds run on
     * the main thread instead of a libuv worker, blocking the event loop for at most about that long.
     * Inline calls skip the hop to a worker and back (≈ 0.05 ms idle, far more on a loaded machine)
     * and decode on a thread that is already running: 9.0–9.8 ms per call inline against 9.6–11.0 ms
     * through a worker on a V = 152k target (bench/nativeCallPaths.ts). A server wants a small value (its event loop serves
     * other requests meanwhile, and a worker's decode overlaps their JS work); one generation at a time
     * wants a large one. Default 20; 0 always uses a worker.
     */
    readonly inlineBelowMilliseconds?: number;
}

/** Largest batch that may run inline (a draft step or a γ ≤ 7 verification). */
const inlineBatchLimit = 8;

/**
 * ModelBackend on specgate's own llama.cpp addon (native/src/addon.cpp), CPU only.
 *
 * Cost of `evaluate`: one llama_decode of the whole batch on a libuv worker thread; the requested
 * rows are written by that thread straight into a Float64Array (floats widened in C++, so no JS
 * value per entry and nothing on the event loop but the promise). `evaluateArgmax` reduces each row
 * to its first maximum natively and transfers one id. Rollback is llama_memory_seq_rm, synchronous
 * (it never waits: a context's decode and its KV edits are serialised by the sequence's queue).
 * `timings` splits each sequence's evaluation time into llama_decode and row transfer.
 */
export class NativeBackend implements ModelBackend {
    public readonly backendKind = "native";
    public readonly vocabularySize: number;
    public readonly contextSize: number;
    public readonly bosToken: number | undefined;
    public readonly eosToken: number | undefined;
    private readonly identity: string;
    private readonly sequences = new Set<NativeSequence>();
    private readonly idleContexts: NativeContextHandle[] = [];
    private disposed = false;

    private constructor(
        private readonly model: NativeModelHandle,
        vocabularyIdentityHash: string,
        private readonly vocabulary: VocabularyDescription,
        vocabularySize: number,
        private readonly options: {threads: number; contextSize: number; batchSize: number; maxIdleSequences: number; inlineBelowMilliseconds: number}
    ) {
        this.vocabularySize = vocabularySize;
        this.contextSize = options.contextSize;
        this.bosToken = model.bosToken;
        this.eosToken = model.eosToken;
        this.identity = vocabularyIdentityHash;
    }

    /**
     * Loads a GGUF model. The header is checked in TypeScript first (precise ModelLoadError for a
     * missing, non-GGUF or truncated file); what llama.cpp itself rejects is a ModelLoadError
     * "corrupt" with llama.cpp's error lines. Throws NativeBackendUnavailableError when the addon is
     * not built.
     */
    public static async load(path: string, options: NativeBackendOptions = {}): Promise<NativeBackend> {
        const threads = positiveInteger(options.threads ?? 1, "threads");
        const {header, vocabularySize, trainedContextLength} = readModelHeader(path);
        const sizes = backendSizes(options, trainedContextLength);
        const inlineBelowMilliseconds = options.inlineBelowMilliseconds ?? 20;
        if (!(inlineBelowMilliseconds >= 0))
            throw new InvalidInputError(`must be a non-negative number, got ${inlineBelowMilliseconds}`, "inlineBelowMilliseconds");
        const addon = nativeAddon();
        let model: NativeModelHandle;
        try {
            model = new addon.NativeModel(path);
        } catch (error) {
            throw new ModelLoadError("corrupt", (error as Error).message, path);
        }
        if (model.vocabularySize !== vocabularySize) {
            model.dispose();
            throw new ModelLoadError("corrupt", `llama.cpp reads ${model.vocabularySize} tokens where the GGUF lists ${vocabularySize}`, path);
        }
        return new NativeBackend(model, vocabularyIdentity(header.metadata), describeVocabulary(header.metadata), vocabularySize, {threads, ...sizes, inlineBelowMilliseconds});
    }

    public tokenize(text: string): number[] {
        return Array.from(this.model.tokenize(text, false));
    }

    public tokenizeWithSpecialTokens(text: string): number[] {
        return Array.from(this.model.tokenize(text, true));
    }

    public detokenize(tokens: readonly number[]): string {
        tokens.forEach((token, index) => checkToken(token, this.vocabularySize, `tokens[${index}]`));
        return this.model.detokenize(Int32Array.from(tokens));
    }

    public vocabularyIdentity(): string {
        return this.identity;
    }

    public vocabularyDescription(): VocabularyDescription {
        return this.vocabulary;
    }

    public createSequence(): Promise<NativeSequence> {
        if (this.disposed) return Promise.reject(new InvalidInputError("the model is disposed", "backend"));
        const context = this.idleContexts.pop() ?? new (nativeAddon().NativeContext)(this.model, {
            contextSize: this.options.contextSize,
            sequences: 1,
            batchSize: this.options.batchSize,
            threads: this.options.threads
        });
        const sequence: NativeSequence = new NativeSequence(context, this, this.options.inlineBelowMilliseconds, () => this.release(sequence, context));
        this.sequences.add(sequence);
        return Promise.resolve(sequence);
    }

    /** A finished sequence's context is cleared and pooled: creating one per request costs time and memory churn. */
    private release(sequence: NativeSequence, context: NativeContextHandle): void {
        this.sequences.delete(sequence);
        if (!this.disposed && this.idleContexts.length < this.options.maxIdleSequences) {
            context.clear();
            this.idleContexts.push(context);
            return;
        }
        context.dispose();
    }

    public async dispose(): Promise<void> {
        if (this.disposed) return;
        this.disposed = true;
        for (const sequence of [...this.sequences])
            await sequence.dispose();
        for (const context of this.idleContexts.splice(0))
            context.dispose();
        this.model.dispose();
    }
}

/**
 * A Float64Array the addon will overwrite entirely: not zero-filled on the main thread (at V = 152k a
 * verification's rows are 12 MB), so the pages are first touched by the worker that writes them.
 */
function uninitializedRows(length: number): Float64Array {
    return new Float64Array(Buffer.allocUnsafeSlow(length * Float64Array.BYTES_PER_ELEMENT).buffer, 0, length);
}

/** One sequence on its own llama.cpp context (sequence id 0). */
export class NativeSequence implements BackendSequence {
    public readonly timings: BackendTimings = {decodeMilliseconds: 0, transferMilliseconds: 0, samplingMilliseconds: 0, evaluations: 0};
    private readonly history: number[] = [];
    private readonly queue = new OperationQueue();
    /** Moving average of the native cost of small evaluations; starts high so the first ones go to a worker. */
    private smallCallMilliseconds = Infinity;

    public constructor(
        private readonly context: NativeContextHandle,
        private readonly backend: NativeBackend,
        private readonly inlineBelowMilliseconds: number,
        private readonly release: () => void
    ) {}

    public get tokens(): readonly number[] {
        return this.history;
    }

    public evaluate(tokens: readonly number[], options: EvaluateOptions = {}): Promise<Float64Array[]> {
        return this.queue.run(async () => {
            const positions = this.check(tokens, options);
            if (tokens.length === 0) return [];
            const vocabularySize = this.backend.vocabularySize;
            const rows = uninitializedRows(positions.length * vocabularySize);
            await this.decode(tokens, positions, NativeOutputMode.Logits, rows);
            return positions.map((_position, index) => rows.subarray(index * vocabularySize, (index + 1) * vocabularySize));
        });
    }

    public evaluateDistributions(tokens: readonly number[], sampling: SamplingOptions, options: EvaluateOptions = {}): Promise<EvaluatedDistributions> {
        return this.queue.run(async () => {
            const positions = this.check(tokens, options);
            if (tokens.length === 0) return {logits: [], probabilities: []};
            const vocabularySize = this.backend.vocabularySize;
            const limit = options.vocabularyLimit;
            if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 1 && limit <= vocabularySize))
                throw new InvalidInputError(`must be an integer in [1, ${vocabularySize}], got ${limit}`, "vocabularyLimit");
            const rows = uninitializedRows(2 * positions.length * vocabularySize);
            await this.decode(tokens, positions, NativeOutputMode.Distribution, rows, limit === undefined ? sampling : {...sampling, limit});
            const row = (index: number): Float64Array => rows.subarray(index * vocabularySize, (index + 1) * vocabularySize);
            return {
                logits: positions.map((_position, index) => row(index)),
                probabilities: positions.map((_position, index) => row(positions.length + index))
            };
        });
    }

    public evaluateArgmax(tokens: readonly number[], options: EvaluateOptions = {}): Promise<number[]> {
        return this.queue.run(async () => {
            const positions = this.check(tokens, options);
            if (tokens.length === 0) return [];
            const ids = new Int32Array(positions.length);
            await this.decode(tokens, positions, NativeOutputMode.Argmax, ids);
            return Array.from(ids);
        });
    }

    private check(tokens: readonly number[], options: EvaluateOptions): number[] {
        return checkEvaluation(tokens, options, {
            vocabularySize: this.backend.vocabularySize, contextSize: this.backend.contextSize, length: this.history.length
        });
    }

    private async decode(
        tokens: readonly number[], outputs: readonly number[], mode: NativeOutputMode, destination?: Float64Array | Int32Array, sampling?: NativeSampling
    ): Promise<void> {
        const start = this.history.length;
        const batch = [
            Int32Array.from(tokens), new Int32Array(tokens.length), Int32Array.from(tokens, (_token, index) => start + index),
            [{outputs: Int32Array.from(outputs), mode, destination, sampling}]
        ] as const;
        const small = tokens.length <= inlineBatchLimit;
        const inline = small && this.smallCallMilliseconds < this.inlineBelowMilliseconds;
        const timings = (inline ? this.context.decodeNow(...batch) : null) ?? await this.context.decode(...batch);
        const rowError = timings.groups[0]?.error;
        for (const token of tokens) this.history.push(token);
        this.timings.decodeMilliseconds += timings.decodeMilliseconds;
        this.timings.transferMilliseconds += timings.transferMilliseconds;
        this.timings.samplingMilliseconds += timings.samplingMilliseconds;
        this.timings.evaluations++;
        if (small) {
            const cost = timings.decodeMilliseconds + timings.transferMilliseconds;
            this.smallCallMilliseconds = this.smallCallMilliseconds === Infinity ? cost : 0.8 * this.smallCallMilliseconds + 0.2 * cost;
        }
        // processRow's refusals (NaN or +Infinity logits, an all-masked row) are what processLogits refuses.
        if (rowError !== undefined) throw new InvalidDistributionError(rowError, "logits");
    }

    public rollback(count: number): Promise<void> {
        return this.queue.run(() => {
            checkRollback(count, this.history.length);
            if (count > 0) {
                this.context.removeTokens(0, this.history.length - count, -1);
                this.history.length -= count;
            }
            return Promise.resolve();
        });
    }

    public clear(): Promise<void> {
        return this.queue.run(() => {
            this.context.clear();
            this.history.length = 0;
            return Promise.resolve();
        });
    }

    public dispose(): Promise<void> {
        return this.queue.close(() => {
            this.release();
            return Promise.resolve();
        });
    }
}
