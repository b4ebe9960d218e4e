import {GrammarConstraint} from "./GrammarConstraint.js";
import {InvalidInputError, ModelLoadError, ServerOverloadedError} from "../errors.js";
import {BatchScheduler} from "./BatchScheduler.js";
import type {BatchStatistics, ConstraintCompileOptions, ModelBackend, SequenceOptions} from "./ModelBackend.js";
import {backendSizes, positiveInteger} from "./backendSizes.js";
import {checkTokens} from "./checkEvaluation.js";
import {allGpuLayers, defaultGpuChoice, describeDevices, type GpuChoice, parseGpuLayers, resolveGpu} from "./gpuChoice.js";
import {
    type NativeAddon,
    type NativeBuild,
    type NativeContextHandle,
    type NativeContextOptions,
    type NativeGrammarHandle,
    type NativeModelHandle,
    nativeAddon,
    openNativeModel
} from "./nativeAddon.js";
import {NativeSequence} from "./NativeSequence.js";
import {readModelHeader} from "./readModelHeader.js";
import {OwnContextSlot, type SequenceSlot} from "./SequenceSlot.js";
import {describeVocabulary, type VocabularyDescription} from "./VocabularyDescription.js";
import {vocabularyIdentity} from "./vocabularyIdentity.js";

/** The smallest vocabulary whose argmax ids are picked on the device by default (NativeBackendOptions.deviceSelection). */
export const deviceSelectionMinimumVocabulary = 32_000;

export interface NativeBackendOptions {
    /** CPU threads per evaluation (contexts with the same count share one persistent ggml threadpool). Default 1. */
    readonly threads?: number;
    /**
     * Default true: a decode uses fewer than `threads` while other processes keep cores busy (and never
     * more threads than the cores this process may run on). ggml's threads wait for each other by
     * spinning, so 2 threads with one core taken by another process decode several times slower than
     * 1 thread (BENCHMARKS.md, "Contention, and T > 0 by the CPU's vector width"). False: always `threads`.
     */
    readonly adaptiveThreads?: boolean;
    /**
     * Where every row a sequence asks of a decode is an argmax id (temperature 0: target-only, greedy,
     * strict and block verification, trees, the model drafter), the argmax runs inside llama.cpp's graph
     * on the device and only the ids are copied out, not vocabulary-sized logit rows. An exact tie of the
     * largest logit is then resolved by ggml's argmax rather than by the lowest id. Default: on the
     * CUDA build for vocabularies of at least deviceSelectionMinimumVocabulary ids (below it a row is
     * cheaper to copy than the extra graph nodes are to run); off on the CPU build, where the copy is a
     * memory copy and the host's argmax measured no slower (BENCHMARKS.md); off on the Vulkan build,
     * where it selects argmax ids only and draws at T > 0 on the host from copied rows (docs/install.md).
     * False: every row is copied and reduced on the host.
     */
    readonly deviceSelection?: boolean;
    /** Tokens per sequence. Default: the model's context length, capped at 4096. */
    readonly contextSize?: number;
    /** Most tokens in one llama_decode call. Default: contextSize, so an evaluate is one call. */
    readonly batchSize?: number;
    /** Contexts kept for reuse after their sequence is disposed. Default 64; 0 frees each at once. */
    readonly maxIdleSequences?: number;
    /**
     * Evaluations of at most 8 tokens whose recent native cost is below this many milliseconds run on
     * the main thread instead of a libuv worker, blocking the event loop for at most about that long.
     * Inline calls skip the hop to a worker and back (small when idle, far more on a loaded machine)
     * and decode on a thread that is already running (bench/nativeCallPaths.ts measures both paths).
     * A server wants a small value (its event loop serves
     * other requests meanwhile, and a worker's decode overlaps their JS work); one generation at a time
     * wants a large one. Default 20; 0 always uses a worker.
     */
    readonly inlineBelowMilliseconds?: number;
    /**
     * Continuous batching: up to this many sequences share one context (one unified KV cache of
     * batchedSequences × contextSize cells) and are decoded together, one llama_decode per step for all
     * of them (BatchScheduler). Sequences beyond it get a context of their own. Default 1: every
     * sequence has its own context, the fastest for one generation at a time.
     */
    readonly batchedSequences?: number;
    /** Most tokens one shared step decodes (prompts are chunked to fit). Default 512, llama.cpp's ubatch. */
    readonly stepTokens?: number;
    /**
     * The shared context's KV cache as one buffer for all sequences (llama-server's --kv-unified)
     * instead of one stream per sequence (its default with explicit slots). Separate streams make each
     * token attend only to its own sequence, which is faster with many streams (BENCHMARKS.md,
     * "specgate serve against llama-server"). But llama.cpp decodes a batch with separate streams in
     * ubatches of consecutive sequence ids with equally many tokens each, so steps mixing lengths (one
     * token of a target-only request beside γ + 1 of a verification, a prompt chunk) cost several
     * passes over the weights; a unified buffer decodes any mix in one. Default false; always unified
     * while the target feeds an EAGLE-3 head (its layer rows are read in the batch's order, which only a
     * unified cache keeps).
     */
    readonly unifiedKvCache?: boolean;
    /**
     * Branches of the token trees the shared context's sequences may decode (batchedSequences > 1):
     * each sequence then owns that many sequence ids, and the KV cache is unified. Default 1: no trees
     * on the shared context (a tree's sequence then gets a context of its own).
     */
    readonly treeBranches?: number;
    /**
     * The addon that computes: "vulkan" or "cuda" (that GPU build, which must be built and find a
     * device), "off" (the CPU addon), or "auto" (a GPU build that is built and finds a device, else the
     * CPU addon). Default: the SPECGATE_GPU environment variable, else "auto". See gpuChoice.ts.
     */
    readonly gpu?: GpuChoice;
    /** Layers offloaded to the GPU (llama.cpp's -ngl) when a GPU build is used. Default: all of them (999). */
    readonly gpuLayers?: number;
}

/** Most branches of a token tree's sequence (llama.cpp allows 256 sequence ids per context). */
const maxTreeBranches = 64;
/** Cells a tree context holds beyond the sequence's own, for the open tree's nodes. */
const treeNodeCells = 256;

/**
 * The per-sequence context size of a unified KV cache whose `branches` sequence ids share one
 * sequence's cells: its tokens, and the open tree's nodes beside them.
 */
function treeContextSize(contextSize: number, branches: number): number {
    return Math.ceil((contextSize + treeNodeCells) / branches);
}

/**
 * ModelBackend on specgate's own llama.cpp addon (native/src/addon.cpp): its CPU build, or a GPU build
 * (Vulkan, CUDA) offloading `gpuLayers` layers, chosen per model by the `gpu` option.
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
    /** The addon build that computes ("cpu", "vulkan", "cuda"). */
    public readonly nativeBuild: NativeBuild;
    /** Where the model computes: "CPU", or the GPU devices its layers are offloaded to, e.g. "Vulkan0 (llvmpipe (…))". */
    public readonly device: string;

    public readonly vocabularySize: number;
    public readonly contextSize: number;
    public readonly bosToken: number | undefined;
    public readonly eosToken: number | undefined;
    private readonly identity: string;
    private readonly sequences = new Set<NativeSequence>();
    private readonly idleContexts: NativeContextHandle[] = [];
    /** Idle contexts for token trees, by branch count. */
    private readonly idleTreeContexts = new Map<number, NativeContextHandle[]>();
    private scheduler: BatchScheduler | undefined;
    private disposed = false;
    /** The layers every new context keeps the inputs of, for an EAGLE-3 head (enableLayerCapture). */
    private captureLayers: Int32Array | undefined;
    /** Contexts made with captureLayers (one made before goes back to no pool once they are on). */
    private readonly capturing = new WeakSet<NativeContextHandle>();

    public get tokenSelection(): "device" | "host" {
        return this.options.deviceSelection ? "device" : "host";
    }

    private constructor(
        private readonly addon: NativeAddon,
        placement: {build: NativeBuild; device: string},
        private readonly model: NativeModelHandle,
        vocabularyIdentityHash: string,
        private readonly vocabulary: VocabularyDescription,
        vocabularySize: number,
        /** The model's layers and hidden size, from its GGUF header (what an EAGLE-3 head must match). */
        public readonly shape: {readonly blockCount: number | undefined; readonly embeddingLength: number | undefined},
        private readonly options: {
            threads: number;
            adaptiveThreads: boolean;
            deviceSelection: boolean;
            contextSize: number;
            batchSize: number;
            maxIdleSequences: number;
            inlineBelowMilliseconds: number;
            batchedSequences: number;
            stepTokens: number;
            unifiedKvCache: boolean;
            treeBranches: number;
        }
    ) {
        this.vocabularySize = vocabularySize;
        this.contextSize = options.contextSize;
        this.bosToken = model.bosToken;
        this.eosToken = model.eosToken;
        this.identity = vocabularyIdentityHash;
        this.nativeBuild = placement.build;
        this.device = placement.device;
    }

    /**
     * Loads a GGUF model. The header is checked in TypeScript first (precise ModelLoadError for a
     * missing, non-GGUF or truncated file); what llama.cpp itself rejects is a ModelLoadError
     * "corrupt" with llama.cpp's error lines. Throws NativeBackendUnavailableError when the addon is
     * not built, or when `gpu` names a GPU build that is not built or finds no device.
     */
    public static async load(path: string, options: NativeBackendOptions = {}): Promise<NativeBackend> {
        const threads = positiveInteger(options.threads ?? 1, "threads");
        const {header, vocabularySize, trainedContextLength, kvCacheBytesPerToken, blockCount, embeddingLength} = readModelHeader(path);
        const sizes = backendSizes(options, trainedContextLength, kvCacheBytesPerToken);
        const inlineBelowMilliseconds = options.inlineBelowMilliseconds ?? 20;
        const batchedSequences = positiveInteger(options.batchedSequences ?? 1, "batchedSequences");
        const stepTokens = positiveInteger(options.stepTokens ?? 512, "stepTokens");
        const treeBranches = positiveInteger(options.treeBranches ?? 1, "treeBranches");
        if (treeBranches > maxTreeBranches)
            throw new InvalidInputError(`must be at most ${maxTreeBranches}, got ${treeBranches}`, "treeBranches");
        if (!(inlineBelowMilliseconds >= 0))
            throw new InvalidInputError(`must be a non-negative number, got ${inlineBelowMilliseconds}`, "inlineBelowMilliseconds");
        const resolved = resolveGpu(options.gpu ?? defaultGpuChoice());
        const requestedLayers = parseGpuLayers(options.gpuLayers ?? allGpuLayers);
        const gpuLayers = resolved.build === "cpu" ? 0 : requestedLayers;
        const addon = nativeAddon(resolved.build);
        const model = openNativeModel(addon, path, gpuLayers);
        if (model.vocabularySize !== vocabularySize) {
            model.dispose();
            throw new ModelLoadError(
                "corrupt",
                `llama.cpp reads ${model.vocabularySize} tokens where the GGUF lists ${vocabularySize}`,
                path
            );
        }
        const placement = {build: resolved.build, device: describeDevices(resolved, gpuLayers)};
        return new NativeBackend(
            addon,
            placement,
            model,
            vocabularyIdentity(header.metadata),
            describeVocabulary(header.metadata),
            vocabularySize,
            {blockCount, embeddingLength},
            {
                threads,
                adaptiveThreads: options.adaptiveThreads ?? true,
                deviceSelection:
                    options.deviceSelection ?? (resolved.build === "cuda" && vocabularySize >= deviceSelectionMinimumVocabulary),
                ...sizes,
                inlineBelowMilliseconds,
                batchedSequences,
                stepTokens,
                unifiedKvCache: options.unifiedKvCache ?? false,
                treeBranches
            }
        );
    }

    public tokenize(text: string): number[] {
        return Array.from(this.model.tokenize(text, false));
    }

    public tokenizeWithSpecialTokens(text: string): number[] {
        return Array.from(this.model.tokenize(text, true));
    }

    public detokenize(tokens: readonly number[]): string {
        checkTokens(tokens, this.vocabularySize);
        return this.model.detokenize(Int32Array.from(tokens));
    }

    public vocabularyIdentity(): string {
        return this.identity;
    }

    public vocabularyDescription(): VocabularyDescription {
        return this.vocabulary;
    }

    /** Scheduler statistics of the shared context (steps, tokens, submissions, largest step); undefined without batching. */
    public get batchStatistics(): BatchStatistics | undefined {
        return this.scheduler?.stats;
    }

    public get batchedSequences(): number {
        return this.options.batchedSequences;
    }

    /**
     * A GrammarConstraint for the GBNF `grammar` (root rule "root") over this model's vocabulary
     * (llama.cpp's grammar sampler); it keeps the model's memory alive until it is disposed of too.
     */
    public createConstraint(grammar: string): GrammarConstraint {
        if (this.disposed) throw new InvalidInputError("the model is disposed", "backend");
        let handle: NativeGrammarHandle;
        try {
            handle = new this.addon.NativeGrammar(this.model, grammar);
        } catch (error) {
            throw new InvalidInputError((error as Error).message, "grammar");
        }
        return new GrammarConstraint(handle);
    }

    /** createConstraint with the grammar built on a thread of its own (see ModelBackend.compileConstraint). */
    public async compileConstraint(grammar: string, options: ConstraintCompileOptions): Promise<GrammarConstraint> {
        if (this.disposed) throw new InvalidInputError("the model is disposed", "backend");
        let handle: NativeGrammarHandle;
        try {
            handle = await this.addon.compileGrammar(this.model, grammar, undefined, options.maxJobs);
        } catch (error) {
            if ((error as {code?: unknown}).code === "grammar_jobs_busy") throw new ServerOverloadedError((error as Error).message);
            throw new InvalidInputError((error as Error).message, options.field ?? "grammar");
        }
        return new GrammarConstraint(handle, {computeBudgetMs: options.computeBudgetMs, field: options.field});
    }

    /**
     * A sequence on the shared context (continuous batching) or on a context of its own; one for token
     * trees (`branches` > 1) always gets its own context, with that many sequence ids on a unified KV
     * cache (the tree's nodes share cells across branches) and room for the open tree's nodes.
     */
    public createSequence(options: SequenceOptions = {}): Promise<NativeSequence> {
        if (this.disposed) return Promise.reject(new InvalidInputError("the model is disposed", "backend"));
        const branches = options.branches ?? 1;
        if (!Number.isSafeInteger(branches) || branches < 1 || branches > maxTreeBranches)
            return Promise.reject(new InvalidInputError(`must be an integer in [1, ${maxTreeBranches}], got ${branches}`, "branches"));
        const slot =
            branches > 1 && branches > this.options.treeBranches
                ? this.treeSlot(branches)
                : (this.sharedSlot() ?? (branches > 1 ? this.treeSlot(branches) : this.ownSlot()));
        const sequence: NativeSequence = new NativeSequence(slot, this, (disposed) => this.sequences.delete(disposed));
        this.sequences.add(sequence);
        return Promise.resolve(sequence);
    }

    /**
     * From now on every sequence's decodes keep the inputs of `layers` for each token, which an EAGLE-3
     * head drafting for it reads (Eagle3HeadBackend): contexts made from here on capture them, idle ones
     * made before are freed. Calling it again with the same layers does nothing; other layers, or a
     * shared context already made without them, are an InvalidInputError naming `draft`.
     */
    public enableLayerCapture(layers: readonly number[]): void {
        const wanted = Int32Array.from(layers);
        const current = this.captureLayers;
        if (current !== undefined && current.length === wanted.length && current.every((layer, index) => layer === wanted[index])) return;
        if (current !== undefined)
            throw new InvalidInputError(
                `reads target layers ${layers.join(", ")}, but the target already feeds a head reading ${current.join(", ")}`,
                "draft"
            );
        if (this.scheduler !== undefined)
            throw new InvalidInputError(
                "an EAGLE-3 head must be paired before the target's shared context is made (its first sequence)",
                "draft"
            );
        this.captureLayers = wanted;
        for (const context of this.idleContexts.splice(0)) context.dispose();
        for (const pool of this.idleTreeContexts.values()) for (const context of pool.splice(0)) context.dispose();
    }

    /** A context of this model, capturing the layers enableLayerCapture named. */
    private newContext(options: Omit<NativeContextOptions, "captureLayers">): NativeContextHandle {
        const context = new this.addon.NativeContext(this.model, {...options, captureLayers: this.captureLayers});
        if (this.captureLayers !== undefined) this.capturing.add(context);
        return context;
    }

    private sharedSlot(): SequenceSlot | undefined {
        const {batchedSequences, contextSize, stepTokens, threads, adaptiveThreads, deviceSelection, unifiedKvCache, treeBranches} =
            this.options;
        if (batchedSequences <= 1) return undefined;
        const trees = treeBranches > 1;
        this.scheduler ??= new BatchScheduler(
            this.newContext({
                contextSize: trees ? treeContextSize(contextSize, treeBranches) : contextSize,
                sequences: batchedSequences * treeBranches,
                threads,
                adaptiveThreads,
                deviceSelection,
                // A context feeding a head is unified (the addon enforces it: see NativeContext's captureLayers).
                unified: unifiedKvCache || trees || this.captureLayers !== undefined,
                // A step holds at most stepTokens of chunks plus one submission that may not be cut (all its rows wanted).
                batchSize: contextSize + stepTokens
            }),
            batchedSequences,
            {stepTokens, inlineBelowMilliseconds: this.options.inlineBelowMilliseconds, branches: treeBranches}
        );
        return this.scheduler.acquire();
    }

    private ownSlot(): SequenceSlot {
        const context =
            this.idleContexts.pop() ??
            this.newContext({
                contextSize: this.options.contextSize,
                sequences: 1,
                batchSize: this.options.batchSize,
                threads: this.options.threads,
                adaptiveThreads: this.options.adaptiveThreads,
                deviceSelection: this.options.deviceSelection
            });
        return new OwnContextSlot(context, this.options.inlineBelowMilliseconds, (released) => this.release(released));
    }

    private treeSlot(branches: number): SequenceSlot {
        const {contextSize, threads, adaptiveThreads, deviceSelection, inlineBelowMilliseconds} = this.options;
        const pool = this.idleTreeContexts.get(branches) ?? [];
        this.idleTreeContexts.set(branches, pool);
        const context =
            pool.pop() ??
            this.newContext({
                contextSize: treeContextSize(contextSize, branches),
                sequences: branches,
                unified: true,
                batchSize: contextSize,
                threads,
                adaptiveThreads,
                deviceSelection
            });
        return new OwnContextSlot(context, inlineBelowMilliseconds, (released) => this.release(released, pool), branches);
    }

    /** A finished sequence's context is cleared and pooled: creating one per request costs time and memory churn. */
    private release(context: NativeContextHandle, pool = this.idleContexts): void {
        const stale = this.captureLayers !== undefined && !this.capturing.has(context);
        if (!this.disposed && !stale && pool.length < this.options.maxIdleSequences) {
            context.clear();
            pool.push(context);
            return;
        }
        context.dispose();
    }

    public async dispose(): Promise<void> {
        if (this.disposed) return;
        this.disposed = true;
        for (const sequence of [...this.sequences]) await sequence.dispose();
        for (const context of this.idleContexts.splice(0)) context.dispose();
        for (const pool of this.idleTreeContexts.values()) for (const context of pool.splice(0)) context.dispose();
        this.scheduler?.dispose();
        this.model.dispose();
    }
}
