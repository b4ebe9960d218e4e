import type {TokenConstraint} from "./TokenConstraint.js";
import type {SamplingOptions} from "../distributions/SamplingOptions.js";
import type {VocabularyDescription} from "./VocabularyDescription.js";

/**
 * What specgate needs from an inference engine: a tokenizer, a vocabulary fingerprint, and sequences
 * that evaluate a batch of tokens in one call, return raw logits where asked, and roll back.
 */
export interface ModelBackend {
    /** The engine behind it, where it is one of specgate's (test doubles leave it out). */
    readonly backendKind?: "native" | "node-llama-cpp";
    /** Native backend: the addon build that computes ("cpu", "vulkan", "cuda"). */
    readonly nativeBuild?: "cpu" | "vulkan" | "cuda";
    /** Where the model computes: "CPU", or the GPU devices it is offloaded to (native backend). */
    readonly device?: string;
    /**
     * Native backend: where argmax ids are picked — "device", inside llama.cpp's graph (an exact tie of
     * the largest logit then resolved by ggml's argmax, not the lowest id), or "host" (NativeBackendOptions.deviceSelection).
     */
    readonly tokenSelection?: "device" | "host";
    /**
     * Sequences decoded together on one shared context (continuous batching); 1 or absent: each
     * sequence decodes on its own. Rows of a batched step may differ from a lone decode by llama.cpp's
     * batch-size-dependent rounding, so it is part of a decode path's fingerprint.
     */
    readonly batchedSequences?: number;
    /** Counters of the shared context's steps, where sequences are batched (BatchScheduler.stats). */
    readonly batchStatistics?: BatchStatistics;
    /** Number of token ids; every logits row has this length. */
    readonly vocabularySize: number;
    /** Maximum tokens one sequence can hold. */
    readonly contextSize: number;
    readonly bosToken: number | undefined;
    readonly eosToken: number | undefined;

    /** Token ids for `text`, without BOS/EOS and without parsing special-token text. */
    tokenize(text: string): number[];
    /**
     * Token ids for `text` with special-token text (e.g. "<|im_start|>") parsed as the special
     * tokens — for prompts rendered from a chat template, never for user text. Optional.
     */
    tokenizeWithSpecialTokens?(text: string): number[];
    /** Text for `tokens`; special (control) tokens contribute nothing. */
    detokenize(tokens: readonly number[]): string;
    /**
     * A hex sha256 that is equal for two backends iff they tokenize identically: it covers the
     * tokenizer model, every token's text, score and type, the special ids and tokenizer flags.
     */
    vocabularyIdentity(): string;
    /**
     * The token texts and BOS/EOS settings llama.cpp compares to pair a draft with a target (see
     * assertSameVocabulary). Optional: backends without it are paired by identity and size alone.
     */
    vocabularyDescription?(): VocabularyDescription;
    /**
     * A constraint that holds output to the GBNF `grammar` (root rule "root") over this backend's
     * vocabulary, in its start state (a JSON schema's grammar: src/constraints/jsonSchemaGrammar.ts).
     * A grammar llama.cpp cannot parse is an InvalidInputError. Optional: backends without it cannot
     * constrain output (the native backend has it).
     */
    createConstraint?(grammar: string): TokenConstraint;
    /**
     * createConstraint with the grammar built off the event loop (on a thread of its own, at most
     * `options.maxJobs` at once: beyond, a ServerOverloadedError), its masks held to
     * `options.computeBudgetMs`. Optional, as createConstraint.
     */
    compileConstraint?(grammar: string, options: ConstraintCompileOptions): Promise<TokenConstraint>;
    /**
     * A fresh, empty sequence (its own KV cache). `options.branches` > 1 asks for a sequence that can
     * decode token trees of that many branches (evaluateTree), where the backend can.
     */
    createSequence(options?: SequenceOptions): Promise<BackendSequence>;
    dispose(): Promise<void>;
}

export interface SequenceOptions {
    /** Sequence ids a token tree on it may use at once (one per leaf of the widest tree). Default 1: no trees. */
    readonly branches?: number;
}

/** The rows evaluateTree returns, one per node: argmax ids, logit rows, or logit and sampler rows. */
export type TreeRows =
    {readonly kind: "argmax"} | {readonly kind: "logits"} | {readonly kind: "distributions"; readonly sampling: SamplingOptions};

/** A tree evaluation's rows, in node order (argmax for kind "argmax", else logits and, for "distributions", probabilities). */
export interface TreeEvaluation {
    readonly argmax?: number[];
    readonly logits: Float64Array[];
    readonly probabilities?: Float64Array[];
}

export interface EvaluateOptions {
    /**
     * Indexes into the evaluated `tokens` (0 = first token of this call) whose next-token logits are
     * wanted; logits at index i predict the token after tokens[i]. Default: the last index only.
     */
    readonly positions?: readonly number[];
    /**
     * evaluateDistributions only: sampler rows over the first N ids, as if the logits beyond were −∞
     * (a draft/target pair whose vocabularies differ in length). Logit rows stay whole.
     */
    readonly vocabularyLimit?: number;
    /**
     * evaluateDistributions only: the caller reads the sampler rows alone, so a backend may skip
     * handing the logit rows over (`logits` is then empty). At V = 152k that is 1.2 MB less per row.
     */
    readonly withoutLogits?: boolean;
    /**
     * evaluateDistributions only: the caller reads the returned rows only until its next call on this
     * sequence, so a backend may write every call's rows into the same memory (the engine's target
     * verification with a policy that keeps no rows: no fresh 1.2 MB array per row at V = 152k).
     */
    readonly transientRows?: boolean;
}

/**
 * Where a backend's evaluation time went, by part: the model's own forward pass, handing its rows
 * (or argmax ids) over, and sampler rows computed by the backend. Wall time around an evaluation
 * minus these is the cost of the call itself (thread hops, JS glue).
 */
export interface EvaluationSplit {
    /** Milliseconds inside llama_decode. */
    decodeMilliseconds: number;
    /** Milliseconds copying logit rows out of llama.cpp, or reducing them to argmax ids. */
    transferMilliseconds: number;
    /** Milliseconds computing sampler rows natively (evaluateDistributions). */
    samplingMilliseconds: number;
    /**
     * Milliseconds queued for a batch shared with other sequences (continuous batching): before the
     * step that decodes it starts, and between the steps of a prompt decoded in chunks. In such a step
     * decodeMilliseconds is the whole step's llama_decode. Absent where sequences are not batched.
     */
    batchWaitMilliseconds?: number;
    /**
     * Bytes copied out of the model's compute graph for this evaluation's rows: whole logit rows
     * (vocabulary × 4 bytes each), or 4 bytes per token id picked on the device (argmax inside the
     * graph). From a GPU these cross to the host; on a CPU build they are a memory copy. Absent where
     * the backend does not measure it.
     */
    deviceToHostBytes?: number;
}

/** EvaluationSplit summed over a sequence's life. */
export interface BackendTimings extends EvaluationSplit {
    /** Evaluations counted. */
    evaluations: number;
}

/** Raw logit rows and their sampler rows, position by position. */
export interface EvaluatedDistributions {
    readonly logits: Float64Array[];
    readonly probabilities: Float64Array[];
}

/** What continuous batching did so far on one model's shared context. */
export interface BatchStatistics {
    /** llama_decode calls of the shared context. */
    readonly steps: number;
    /** Tokens decoded in them. */
    readonly tokens: number;
    /** Evaluations (or prompt chunks) served by them. */
    readonly submissions: number;
    /** Most evaluations in one step. */
    readonly largestStep: number;
    /** Milliseconds with an evaluation pending and no step running (gathering the other sequences). */
    readonly gatherMilliseconds: number;
    /** Milliseconds inside the steps' llama_decode. */
    readonly decodeMilliseconds: number;
    /** Rollbacks that arrived while a step ran, handed to the next step instead of editing the cache at once. */
    readonly deferredRemovals: number;
}

/** A sequence's tokens and KV cache, saved to host memory (BackendSequence.saveState). */
export interface SequenceState {
    readonly tokens: readonly number[];
    /** The backend's serialised KV cells (opaque); its length is the memory the state holds. */
    readonly data: Uint8Array;
}

/** One growing token sequence with its KV cache. */
export interface BackendSequence {
    /** Tokens currently in the KV cache, in order. */
    readonly tokens: readonly number[];
    /** Native time split of every evaluation so far; absent where the backend cannot measure it. */
    readonly timings?: BackendTimings;
    /**
     * Appends `tokens` to the sequence in one batched forward pass and returns, for each entry of
     * `positions` (same order), the raw logits over the full vocabulary.
     */
    evaluate(tokens: readonly number[], options?: EvaluateOptions): Promise<Float64Array[]>;
    /**
     * Like `evaluate`, but returns only the argmax token id (lowest id on ties) at each position,
     * without transferring logits — what greedy verification needs, and far cheaper for large
     * vocabularies. Optional: backends without it get the full-logits path.
     */
    evaluateArgmax?(tokens: readonly number[], options?: EvaluateOptions): Promise<number[]>;
    /**
     * Like `evaluate`, and also each row's sampler row for `sampling` — what processLogits(row,
     * sampling) returns — computed by the backend (natively, off the event loop). Optional.
     */
    evaluateDistributions?(
        tokens: readonly number[],
        sampling: SamplingOptions,
        options?: EvaluateOptions
    ): Promise<EvaluatedDistributions>;
    /**
     * A copy of the sequence's KV cache and tokens in host memory (llama.cpp's llama_state_seq_get_data),
     * to put back later with restoreState, into this sequence or another of the same backend: what a
     * prompt cache keeps of sequences it must reuse; with an EAGLE-3 head paired, the layer rows it
     * reads for those tokens come with it. Optional.
     */
    saveState?(): Promise<SequenceState>;
    /** Replaces the sequence's tokens and KV cache (and layer rows) with a saved state (llama_state_seq_set_data). Optional. */
    restoreState?(state: SequenceState): Promise<void>;
    /**
     * Says no evaluation will come until further notice (a prompt cache keeps the sequence between
     * requests), so a batching backend stops holding its steps for this sequence. Optional.
     */
    idle?(): void;
    /** Branches a token tree on this sequence may use (SequenceOptions.branches); absent or 1: no trees. */
    readonly treeBranches?: number;
    /**
     * Decodes nodes of a token tree after the sequence's tokens in one batched pass and returns a row
     * per node: node i follows node parents[i] (an index among the tree's nodes so far, this call's
     * included; −1: the sequence's last token) and attends to its ancestors only. A tree stays open over
     * several calls (a draft model grows one depth per call) until keepTreePath; meanwhile the other
     * evaluations and rollbacks are refused. Optional (sequences with treeBranches > 1 have it).
     */
    evaluateTree?(tokens: readonly number[], parents: readonly number[], rows: TreeRows): Promise<TreeEvaluation>;
    /**
     * Closes the open tree: the nodes of `path` (from the first depth down, parent to child; may be
     * empty) join the sequence's tokens, the other nodes' KV cells are dropped.
     */
    keepTreePath?(path: readonly number[]): Promise<void>;
    /**
     * Native backend: the context and sequence id the sequence decodes on, where the target layers an
     * EAGLE-3 head reads are captured (NativeBackend.enableLayerCapture). Optional.
     */
    layerSource?(): LayerSource | undefined;
    /** Removes the last `count` tokens from the sequence and its KV cache (e.g. a rejected draft suffix). */
    rollback(count: number): Promise<void>;
    /** Empties the sequence. */
    clear(): Promise<void>;
    dispose(): Promise<void>;
}

/**
 * A sequence that decodes token trees: BackendSequence's optional tree methods, present
 * (supportsTrees). Its branches (treeBranches) bound a tree's width.
 */
export type TreeCapableSequence = BackendSequence & Required<Pick<BackendSequence, "evaluateTree" | "keepTreePath">>;

/** A sequence that returns argmax ids without logit rows: BackendSequence.evaluateArgmax, present (supportsArgmax). */
export type ArgmaxCapableSequence = BackendSequence & Required<Pick<BackendSequence, "evaluateArgmax">>;

/** Where a native sequence decodes (BackendSequence.layerSource): its context (a NativeContextHandle) and sequence id there. */
export interface LayerSource {
    readonly context: unknown;
    readonly sequence: number;
    /** Slots of a context shared by several sequences (continuous batching), whose heads may draft together; absent: a context of its own. */
    readonly slots?: number;
}

/** How a constraint is compiled (ModelBackend.compileConstraint). */
export interface ConstraintCompileOptions {
    /** Grammar jobs (conversions and constructions, abandoned ones included) running at once, process-wide. */
    readonly maxJobs: number;
    /** Milliseconds of mask work the constraint may spend (GrammarConstraintOptions.computeBudgetMs). */
    readonly computeBudgetMs?: number;
    /** Names the grammar in errors (a request field). */
    readonly field?: string;
}
