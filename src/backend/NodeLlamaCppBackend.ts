import {
    type ControlledEvaluateInputItem,
    getLlama,
    type Llama,
    type LlamaContext,
    type LlamaContextSequence,
    LlamaLogLevel,
    type LlamaModel,
    type Token
} from "node-llama-cpp";
import {InvalidDistributionError, InvalidInputError, ModelLoadError} from "../errors.js";
import type {GgufReader} from "../gguf/GgufReader.js";
import {backendSizes, positiveInteger} from "./backendSizes.js";
import {checkEvaluation, checkRollback, checkTokens} from "./checkEvaluation.js";
import {createDirectLogitsReader, type DirectLogitsReader} from "./directLogits.js";
import type {BackendSequence, EvaluateOptions, ModelBackend} from "./ModelBackend.js";
import {OperationQueue} from "./OperationQueue.js";
import {readModelHeader} from "./readModelHeader.js";
import {describeVocabulary, type VocabularyDescription} from "./VocabularyDescription.js";
import {vocabularyIdentity} from "./vocabularyIdentity.js";

export interface NodeLlamaCppBackendOptions {
    /**
     * CPU threads per evaluation. Default 1. Set it deliberately: on a 2-core machine the library's
     * default (all cores, shared with everything else) made a tiny model hundreds of times slower.
     */
    readonly threads?: number;
    /** Tokens per sequence. Default: the model's context length, capped at 4096. */
    readonly contextSize?: number;
    /** Most tokens decoded in one native batch. Default: contextSize, so an evaluate is one batch. */
    readonly batchSize?: number;
    /**
     * How logits rows leave node-llama-cpp. "direct" (default) reads the native sampler's flat
     * (token, logit) array through node-llama-cpp internals (see directLogits.ts) and falls back to
     * "controlledEvaluate" where those internals are missing; "controlledEvaluate" uses only the
     * public API. Both return the same logits; this exists to compare them.
     */
    readonly logitsTransfer?: LogitsTransfer;
    /**
     * Contexts kept for reuse after their sequence is disposed. Default 64 (a server's peak of
     * concurrent sequences); 0 frees every context at once.
     */
    readonly maxIdleSequences?: number;
}

export type LogitsTransfer = "direct" | "controlledEvaluate";

const recentLogLimit = 20;
/** llama.cpp log lines, numbered so a failed load can pick out the lines logged during it. */
const recentLogs: {number: number; line: string}[] = [];
let nextLogNumber = 0;
let llamaPromise: Promise<Llama> | undefined;

/**
 * One llama.cpp instance per process, CPU only, never building or downloading a binary (the
 * prebuilt one from the npm package must work). llama.cpp's own log lines are kept in a short ring
 * instead of printed, and attached to load errors, whose thrown message is otherwise generic.
 */
export function sharedLlama(): Promise<Llama> {
    llamaPromise ??= getLlama({
        gpu: false,
        build: "never",
        logLevel: LlamaLogLevel.warn,
        logger: (level, message) => {
            recentLogs.push({number: nextLogNumber++, line: `${level}: ${message.trim()}`});
            if (recentLogs.length > recentLogLimit) recentLogs.shift();
        }
    });
    return llamaPromise;
}

/**
 * ModelBackend on node-llama-cpp (llama.cpp), CPU only.
 *
 * Cost of `evaluate`: all tokens go to llama.cpp as one batch (one llama_decode when the batch fits
 * `batchSize`); logits are computed only for the requested positions. For each one the binding runs
 * a greedy (logit-preserving) sampler, sorts the whole vocabulary by logit (forced whenever full
 * logits are requested) and hands back one JS number per token id and per logit. The default
 * "direct" transfer (directLogits.ts) reads that flat array into the Float64Array; the public
 * controlledEvaluate path additionally builds a Map per row. Neither node-llama-cpp 3.22 nor its
 * addon offers a typed-array logits read, so the sort and the per-entry JS numbers remain: a row
 * costs time in proportion to the vocabulary, on top of the decode, and a call without logits
 * costs almost nothing more than the decode (docs/history.md has the figures once measured). So ask only
 * for the positions you need; verification of γ drafts needs γ+1 rows. Threads default to 1: on a
 * small shared machine more threads wait on each other at every operation.
 */
export class NodeLlamaCppBackend implements ModelBackend {
    public readonly backendKind = "node-llama-cpp";
    public readonly vocabularySize: number;
    public readonly contextSize: number;
    public readonly bosToken: number | undefined;
    public readonly eosToken: number | undefined;
    private readonly identity: string;
    private readonly vocabulary: VocabularyDescription;
    private readonly sequences = new Set<NodeLlamaCppSequence>();
    private readonly idleSlots: SequenceSlot[] = [];
    private disposed = false;

    private constructor(
        private readonly model: LlamaModel,
        header: GgufReader,
        vocabularySize: number,
        private readonly options: {
            threads: number;
            contextSize: number;
            batchSize: number;
            logitsTransfer: LogitsTransfer;
            maxIdleSequences: number;
        }
    ) {
        // llama.cpp's n_vocab is the length of tokenizer.ggml.tokens, and so is every logits row.
        this.vocabularySize = vocabularySize;
        this.contextSize = options.contextSize;
        this.bosToken = model.tokens.bos ?? undefined;
        this.eosToken = model.tokens.eos ?? undefined;
        this.identity = vocabularyIdentity(header.metadata);
        this.vocabulary = describeVocabulary(header.metadata);
    }

    /**
     * Loads a GGUF model. The header is parsed and bounds-checked in TypeScript first, so a missing
     * file, a non-GGUF file or a truncated / malformed GGUF is a ModelLoadError with a precise
     * reason; whatever llama.cpp itself rejects (missing hyperparameters, unknown architecture, wrong
     * tensor shapes) is a ModelLoadError "corrupt" carrying llama.cpp's last log lines.
     */
    public static async load(path: string, options: NodeLlamaCppBackendOptions = {}): Promise<NodeLlamaCppBackend> {
        const threads = positiveInteger(options.threads ?? 1, "threads");
        const {header, vocabularySize, trainedContextLength, kvCacheBytesPerToken} = readModelHeader(path);
        const sizes = backendSizes(options, trainedContextLength, kvCacheBytesPerToken);

        const logitsTransfer = options.logitsTransfer ?? "direct";
        if (logitsTransfer !== "direct" && logitsTransfer !== "controlledEvaluate")
            throw new InvalidInputError(`must be "direct" or "controlledEvaluate", got ${String(logitsTransfer)}`, "logitsTransfer");

        const llama = await sharedLlama();
        const firstLogNumber = nextLogNumber;
        let model: LlamaModel;
        try {
            model = await llama.loadModel({modelPath: path, gpuLayers: 0});
        } catch (error) {
            const details = recentLogs
                .filter((entry) => entry.number >= firstLogNumber && entry.line.startsWith("error"))
                .map((entry) => entry.line);
            throw new ModelLoadError(
                "corrupt",
                `llama.cpp could not load the model: ${(error as Error).message}${details.length > 0 ? ` (${details.join("; ")})` : ""}`,
                path
            );
        }
        return new NodeLlamaCppBackend(model, header, vocabularySize, {threads, ...sizes, logitsTransfer});
    }

    public tokenize(text: string): number[] {
        return Array.from(this.model.tokenize(text, false));
    }

    public tokenizeWithSpecialTokens(text: string): number[] {
        return Array.from(this.model.tokenize(text, true));
    }

    public detokenize(tokens: readonly number[]): string {
        checkTokens(tokens, this.vocabularySize);
        return this.model.detokenize(tokens as readonly Token[], false);
    }

    public vocabularyIdentity(): string {
        return this.identity;
    }

    public vocabularyDescription(): VocabularyDescription {
        return this.vocabulary;
    }

    public async createSequence(): Promise<NodeLlamaCppSequence> {
        const slot = this.idleSlots.pop() ?? (await this.createSlot());
        const sequence: NodeLlamaCppSequence = new NodeLlamaCppSequence(slot.context, slot.sequence, slot.reader, this, (): Promise<void> =>
            this.release(sequence, slot)
        );
        this.sequences.add(sequence);
        return sequence;
    }

    /**
     * One context per sequence: independent KV caches. One cell more than contextSize because
     * node-llama-cpp keeps the last cell free and shifts the context (silently dropping the oldest
     * tokens) when a sequence would fill it.
     */
    private async createSlot(): Promise<SequenceSlot> {
        const context = await this.model.createContext({
            contextSize: this.options.contextSize + 1,
            batchSize: this.options.batchSize,
            threads: {ideal: this.options.threads, min: this.options.threads},
            sequences: 1
        });
        const sequence = context.getSequence();
        const reader =
            this.options.logitsTransfer === "direct" ? createDirectLogitsReader(context, sequence, this.vocabularySize) : undefined;
        return {context, sequence, reader};
    }

    /**
     * A disposed sequence's context goes back to a pool (history cleared) instead of being freed:
     * creating a llama.cpp context per request costs time, and freeing many at once leaves the
     * process RSS at its high-water mark anyway (glibc keeps the pages), so reuse keeps memory flat
     * under repeated load. The pool holds at most `maxIdleSequences`; the rest are freed.
     */
    private async release(sequence: NodeLlamaCppSequence, slot: SequenceSlot): Promise<void> {
        this.sequences.delete(sequence);
        if (!this.disposed && this.idleSlots.length < this.options.maxIdleSequences) {
            await slot.sequence.clearHistory();
            this.idleSlots.push(slot);
            return;
        }
        await freeSlot(slot);
    }

    public async dispose(): Promise<void> {
        this.disposed = true;
        for (const sequence of [...this.sequences]) await sequence.dispose();
        for (const slot of this.idleSlots.splice(0)) await freeSlot(slot);
        await this.model.dispose();
    }
}

/** A llama.cpp context with its one sequence (and logits reader), reusable across BackendSequences. */
interface SequenceSlot {
    context: LlamaContext;
    sequence: LlamaContextSequence;
    reader: DirectLogitsReader | undefined;
}

async function freeSlot(slot: SequenceSlot): Promise<void> {
    slot.reader?.dispose();
    await slot.context.dispose();
}

export class NodeLlamaCppSequence implements BackendSequence {
    /** The path this sequence's logits take ("direct" unless node-llama-cpp's internals were missing or it was not asked for). */
    public readonly logitsTransfer: LogitsTransfer;
    /** The direct path takes no lock of node-llama-cpp's, so a sequence's calls queue here. */
    private readonly queue = new OperationQueue();

    public constructor(
        private readonly context: LlamaContext,
        private readonly sequence: LlamaContextSequence,
        private readonly reader: DirectLogitsReader | undefined,
        private readonly backend: NodeLlamaCppBackend,
        private readonly release: () => Promise<void>
    ) {
        this.logitsTransfer = reader === undefined ? "controlledEvaluate" : "direct";
    }

    public get tokens(): readonly number[] {
        return this.sequence.contextTokens;
    }

    public evaluate(tokens: readonly number[], options: EvaluateOptions = {}): Promise<Float64Array[]> {
        return this.serialized(() => this.evaluateNow(tokens, options));
    }

    public evaluateArgmax(tokens: readonly number[], options: EvaluateOptions = {}): Promise<number[]> {
        return this.serialized(async () => {
            const positions = this.checkEvaluation(tokens, options);
            if (tokens.length === 0) return [];
            if (this.reader !== undefined) return this.reader.evaluateArgmax(tokens as readonly Token[], positions);
            const wanted = new Set(positions);
            const input: ControlledEvaluateInputItem[] = tokens.map((token, index) =>
                wanted.has(index) ? [token as Token, {generateNext: {token: true, options: {temperature: 0}}}] : (token as Token)
            );
            const results = await this.sequence.controlledEvaluate(input);
            return positions.map((position) => {
                const token = results[position]?.next.token;
                if (token == null) throw new InvalidDistributionError(`expected a token at position ${position}`);
                return token;
            });
        });
    }

    /** Validates an evaluation request and returns the positions to read. */
    private checkEvaluation(tokens: readonly number[], options: EvaluateOptions): number[] {
        return checkEvaluation(tokens, options, {
            vocabularySize: this.backend.vocabularySize,
            contextSize: this.backend.contextSize,
            length: this.sequence.nextTokenIndex
        });
    }

    private async evaluateNow(tokens: readonly number[], options: EvaluateOptions): Promise<Float64Array[]> {
        const positions = this.checkEvaluation(tokens, options);
        if (tokens.length === 0) return [];

        if (this.reader !== undefined) return this.reader.evaluate(tokens as readonly Token[], positions);

        const wanted = new Set(positions);
        // temperature 0 selects the greedy sampler, which only picks an index and leaves the logits raw.
        const input: ControlledEvaluateInputItem[] = tokens.map((token, index) =>
            wanted.has(index) ? [token as Token, {generateNext: {logits: true, options: {temperature: 0}}}] : (token as Token)
        );
        const results = await this.sequence.controlledEvaluate(input);

        const vocabularySize = this.backend.vocabularySize;
        return positions.map((position) => {
            const logits = results[position]?.next.logits;
            if (logits === undefined || logits.size !== vocabularySize)
                throw new InvalidDistributionError(`expected ${vocabularySize} logits at position ${position}, got ${logits?.size ?? 0}`);
            const row = new Float64Array(vocabularySize);
            for (const [token, logit] of logits) row[token] = logit;
            return row;
        });
    }

    public rollback(count: number): Promise<void> {
        return this.serialized(() => this.rollbackNow(count));
    }

    private async rollbackNow(count: number): Promise<void> {
        const length = this.sequence.nextTokenIndex;
        checkRollback(count, length);
        if (count === 0) return;
        await this.sequence.eraseContextTokenRanges([{start: length - count, end: length}]);
    }

    public clear(): Promise<void> {
        return this.serialized(() => this.sequence.clearHistory());
    }

    public dispose(): Promise<void> {
        // Runs after every queued operation; then the context is pooled or freed by the backend.
        return this.queue.close(() => this.release());
    }

    private serialized<T>(operation: () => Promise<T>): Promise<T> {
        return this.queue.run(operation);
    }
}
