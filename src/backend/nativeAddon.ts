import {existsSync} from "node:fs";
import {createRequire} from "node:module";
import {dirname, join} from "node:path";
import {fileURLToPath} from "node:url";
import {ModelLoadError, NativeBackendUnavailableError} from "../errors.js";
import type {EvaluationSplit} from "./ModelBackend.js";
import {guardExitAgainstGrammarJobs} from "./grammarJobExitGuard.js";
import type {
    NativeEagle3HeadGroupHandle,
    NativeEagle3HeadGroupOptions,
    NativeEagle3HeadHandle,
    NativeEagle3HeadOptions
} from "./Eagle3HeadHandle.js";

/**
 * What native/src/addon.cpp exports (see that file for the threading and copying rules). The addon
 * checks every argument: a wrong type, a non-integer, an id, sequence, position, index or size out of
 * range throws a TypeError or RangeError naming the argument, and a disposed model or context an Error.
 */
export interface NativeAddon {
    NativeModel: new (path: string, options?: NativeModelOptions) => NativeModelHandle;
    NativeContext: new (model: NativeModelHandle, options: NativeContextOptions) => NativeContextHandle;
    /**
     * An EAGLE-3 head (`model`, a GGUF of architecture eagle3) drafting for sequence `sequence` of
     * `target`, a context created with the head's layers as captureLayers (Eagle3HeadHandle.ts). A
     * model that is no head is a TypeError; a target without those layers, or of another hidden size
     * than the head reads, a RangeError.
     */
    Eagle3Head: new (
        model: NativeModelHandle,
        target: NativeContextHandle,
        sequence: number,
        options: NativeEagle3HeadOptions
    ) => NativeEagle3HeadHandle;
    /**
     * One EAGLE-3 head context for `options.slots` sequences of `target` (Eagle3HeadHandle.ts), whose
     * drafts for several slots run in shared decodes; the same checks as Eagle3Head.
     */
    Eagle3HeadGroup: new (
        model: NativeModelHandle,
        target: NativeContextHandle,
        options: NativeEagle3HeadGroupOptions
    ) => NativeEagle3HeadGroupHandle;
    /**
     * llama.cpp's grammar for the GBNF `grammar`, from its rule `root` (default "root"), over the
     * model's vocabulary, built on the calling thread (compileGrammar builds it on another); the
     * grammar keeps the model alive. A grammar llama.cpp cannot parse, or
     * without `root`, is an Error; an empty one a RangeError.
     */
    NativeGrammar: new (model: NativeModelHandle, grammar: string, root?: string) => NativeGrammarHandle;
    /**
     * llama.cpp's JSON-schema converter (json_schema_to_grammar, as llama-server converts
     * `response_format`): GBNF whose root rule is "root". Invalid JSON or a schema it refuses is an
     * Error with llama.cpp's message; a schema nested deeper than 256 levels, or with more than 1,000
     * "$ref" keys, a RangeError (the converter recurses on both). It ignores keywords it does not know
     * (src/constraints/jsonSchemaGrammar.ts checks for them first).
     */
    jsonSchemaToGrammar(schemaJson: string): string;
    /**
     * jsonSchemaToGrammar on a thread of its own (native/src/GrammarJob.h): the promise rejects as
     * jsonSchemaToGrammar throws, with an Error whose code is "grammar_too_large" when the grammar has
     * more than `maxGrammarBytes` bytes, and at once with code "grammar_jobs_busy" when `maxJobs`
     * grammar jobs (abandoned ones included) are running. A caller may stop waiting: the thread ends
     * on its own.
     */
    compileJsonSchema(schemaJson: string, maxJobs: number, maxGrammarBytes: number): Promise<string>;
    /** new NativeGrammar(model, grammar, root) on a thread of its own, as compileJsonSchema runs (code "grammar_jobs_busy"). */
    compileGrammar(model: NativeModelHandle, grammar: string, root: string | undefined, maxJobs: number): Promise<NativeGrammarHandle>;
    /** Grammar jobs (compileJsonSchema, compileGrammar) whose thread still runs, abandoned ones included. */
    grammarJobsRunning(): number;
    /**
     * Ends the process at once with `code` when a grammar job still runs (no static destructors run
     * under its thread); false otherwise. Installed on process "exit" when the addon loads
     * (grammarJobExitGuard.ts).
     */
    exitWhileGrammarJobsRun(code: number): boolean;
    /** The build, ggml's version and the backends and devices it loaded (as `llama-cli --list-devices`). */
    backendInfo(): NativeBackendInfo;
}

export interface NativeModelOptions {
    /** Layers offloaded to the GPU devices ggml found (llama.cpp's -ngl); 0, the default, keeps the model on the CPU. */
    gpuLayers?: number;
}

/**
 * The addon builds: "cpu" (llama.cpp linked statically, what `npm install` or `npx specgate build`
 * builds) and the GPU ones `npx specgate build --gpu <gpu>` adds (node-llama-cpp's prebuilt libraries
 * of the same release).
 */
export const nativeBuilds = ["cpu", "vulkan", "cuda"] as const;
export type NativeBuild = (typeof nativeBuilds)[number];

/** One ggml device, as ggml_backend_dev_* describes it. */
export interface NativeDevice {
    /** ggml's device name, e.g. "Vulkan0", "CUDA0", "CPU". */
    readonly name: string;
    /** The hardware, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)". */
    readonly description: string;
    readonly type: "cpu" | "gpu" | "igpu" | "accelerator";
    /** The ggml backend it belongs to, e.g. "Vulkan", "CUDA", "CPU". */
    readonly backend: string;
    /** Bytes. */
    readonly memoryFree: number;
    readonly memoryTotal: number;
}

export interface NativeBackendInfo {
    readonly build: NativeBuild;
    readonly ggmlVersion: string;
    readonly ggmlCommit: string;
    /** llama_print_system_info: the CPU features the CPU backend uses. */
    readonly systemInfo: string;
    /** The ggml backends loaded (registered), e.g. ["Vulkan", "CPU"]. */
    readonly backends: readonly string[];
    readonly devices: readonly NativeDevice[];
}

export interface NativeModelHandle {
    readonly vocabularySize: number;
    readonly bosToken: number | undefined;
    readonly eosToken: number | undefined;
    tokenize(text: string, parseSpecial: boolean): Int32Array;
    /** Ids in [0, vocabularySize). */
    detokenize(tokens: Int32Array): string;
    /** Idempotent. Contexts made from the model keep it (its memory) until they are disposed of too. */
    dispose(): void;
}

/** What a grammar's step on the worker pool did: tokens accepted or rows masked, and the worker's milliseconds. */
export interface NativeGrammarStep {
    readonly count: number;
    readonly milliseconds: number;
}

/**
 * A grammar's state over a vocabulary (native/src/grammar.cpp). Beyond llama.cpp's grammar, control
 * and unknown tokens other than end-of-generation ones are never allowed (detokenize renders them as
 * nothing, so they could not be held to the grammar), and the accepted bytes stay strict UTF-8;
 * end-of-generation tokens are allowed only where the grammar may end. mask, acceptTokens and maskRows
 * run on libuv's worker pool; the other calls on the calling thread, and they throw while a worker
 * call runs ("busy"). A disposed grammar throws an Error.
 */
export interface NativeGrammarHandle {
    readonly vocabularySize: number;
    /** Whether `token` (an id in [0, vocabularySize)) may come next. */
    allows(token: number): boolean;
    /**
     * Writes −Infinity into row[id] for every id that may not come next; `row` holds vocabularySize
     * entries. Ids already −Infinity are skipped: a whole 152k-token row costs 10–35 ms, one cut to a
     * few candidates microseconds. The work runs on libuv's worker pool over a copy of the row, which
     * is written once it ends; resolves with the worker's milliseconds (a RangeError if the row was
     * resized or detached meanwhile).
     */
    mask(row: Float64Array): Promise<number>;
    /**
     * On libuv's worker pool: accepts `tokens` in order while each is allowed; `count` is how many
     * were. With `restore` the state is put back afterwards. Until it settles every other call is refused.
     */
    acceptTokens(tokens: Int32Array, restore: boolean): Promise<NativeGrammarStep>;
    /**
     * On libuv's worker pool: row i (vocabularySize entries) masked in the state after tokens[0..i),
     * stopping after the first row whose token is missing or not allowed; with `greedy`, a row whose
     * argmax (lowest index among equals) is allowed stays whole. The state is unchanged afterwards;
     * `count` is the rows masked. Rows are copied and written once it ends (a RangeError if one was
     * resized or detached meanwhile).
     */
    maskRows(rows: readonly Float64Array[], tokens: Int32Array, greedy: boolean): Promise<NativeGrammarStep>;
    /** Advances past `token`; an Error ("token N is not allowed by the grammar here") when it may not come next, the state unchanged. */
    accept(token: number): void;
    /** Remembers the current state (a copy of the grammar's stacks, not its rules); one mark, replaced by the next. */
    mark(): void;
    /** Returns to the marked state; an Error without a mark. */
    rewind(): void;
    /** An independent grammar in the same state (a deep copy). */
    clone(): NativeGrammarHandle;
    /** Idempotent. */
    dispose(): void;
}

export interface NativeContextOptions {
    /** Cells per sequence. */
    contextSize: number;
    /** Sequences (seq ids 0 … sequences − 1), each with its own contextSize cells. */
    sequences: number;
    /** Most tokens in one decode call. */
    batchSize: number;
    threads: number;
    /**
     * One KV buffer shared by all sequences instead of one stream each: a batch mixing sequences with
     * different token counts then decodes in one pass. For contexts shared by many sequences.
     */
    unified?: boolean;
    /**
     * Default true: a decode uses fewer than `threads` while other processes keep cores busy, and never
     * more than the cores this process may run on (ggml's threads spin at every barrier, so threads
     * waiting for a core stall the others: native/src/runtime.h, threadsForDecode). False: always `threads`.
     */
    adaptiveThreads?: boolean;
    /**
     * Default true: a sequence whose rows of a decode are all argmax ids, or all Drawn ids of one sampler
     * setting, gets them picked inside the graph, so 4 bytes per row leave the device instead of a logit
     * row (native/src/DeviceSelection.h). An exact tie of the largest logit is then resolved by ggml's
     * argmax, not by the lowest id, and a draw may pick another token for the same uniform (DeviceDraw.h).
     */
    deviceSelection?: boolean;
    /**
     * Three layer ids of the model: every decode keeps the inputs of those layers for each token, per
     * sequence, for an EAGLE-3 head drafting on this context (Eagle3Head). Absent: none are kept.
     */
    captureLayers?: Int32Array;
}

/** Sampler settings for Distribution, Probabilities and Drawn modes (SamplingOptions). */
export interface NativeSampling {
    temperature: number;
    topK: number;
    topP: number;
    minP: number;
    /** Sampler rows over the first `limit` ids only (the rest are 0); absent: the whole vocabulary. */
    limit?: number;
}

/** What a decode returns per requested output: nothing, the logit row, the argmax id, sampler rows, or a drawn id. */
export const NativeOutputMode = {
    None: 0,
    Logits: 1,
    Argmax: 2,
    Distribution: 3,
    Probabilities: 4,
    Drawn: 5,
    Verified: 6,
    Scored: 7,
    Candidates: 8,
    Gathered: 9
} as const;
export type NativeOutputMode = (typeof NativeOutputMode)[keyof typeof NativeOutputMode];

/**
 * The rows one submitter wants from a decode. Row r of `destination` belongs to `outputs[r]` (a batch
 * index): outputs × vocabulary floats (Float32Array, or Float64Array widened by the worker thread) for
 * Logits, one id per output (Int32Array) for Argmax; for Distribution a Float64Array of 2 × outputs ×
 * vocabulary: the logit rows, then the sampler rows for `sampling`; for Probabilities a Float64Array of
 * outputs × vocabulary: the sampler rows alone (half the transfer, for callers that never read logits);
 * for Drawn one id per output (Int32Array), drawn from the sampler row for `sampling` with the output's
 * uniform in `uniforms` (first id whose running probability exceeds uniform × total, SeededChance's rule),
 * inside the graph where the context selects on the device, else on the host from the copied logits;
 * for Verified a Float64Array of 2 × outputs: per output the id drawn from its sampler row without the
 * id `drafted` names (−1: none), then per output that drafted id's probability (lossless verification
 * of a draft without probabilities: accept with it, else emit the draw).
 * A draft model's verification reads (native/src/DeviceResidual.h), each a Float64Array with per output:
 * Scored [id drawn with the output's uniform, its probability]; Candidates (K = `width`) [probability of
 * the drafted id, K ids drawn with the output's K uniforms, their K probabilities]; Gathered [the
 * probabilities of the output's K ids in `drafted`].
 * A view of a resizable ArrayBuffer is refused (a TypeError naming it). decode writes the rows when its
 * promise settles, on the main thread, into the destination as it is then: one transferred or shrunk
 * in the meantime gets nothing and the promise rejects with a RangeError naming it.
 */
export interface NativeOutputGroup {
    outputs: Int32Array;
    mode: NativeOutputMode;
    destination?: Float32Array | Float64Array | Int32Array;
    sampling?: NativeSampling;
    /** Drawn, Verified, Scored: one uniform in [0, 1) per output; Candidates: `width` per output. */
    uniforms?: Float64Array;
    /** Verified, Candidates: one drafted id per output (−1: none); Gathered: `width` ids per output. */
    drafted?: Int32Array;
    /** Candidates: draws per output; Gathered: ids per output (1..64). */
    width?: number;
}

/** A decode's time split, with each output group's share and, for Distribution, its row error. */
export interface NativeDecodeResult extends EvaluationSplit {
    /** The threads llama_decode computed with (fewer than the context's under contention, with adaptiveThreads). */
    threads?: number;
    /** Bytes copied out of the graph for the rows (EvaluationSplit.deviceToHostBytes); absent from fakes in tests. */
    deviceToHostBytes?: number;
    groups: Array<{
        transferMilliseconds: number;
        samplingMilliseconds: number;
        deviceToHostBytes?: number;
        /** Drawn rows drawn on the host from copied logits rather than on the device. */
        hostRows?: number;
        error?: string;
    }>;
}

export interface NativeContextHandle {
    /**
     * One llama_decode of a batch that may span several sequences; then each group's rows. A group
     * whose sampler rows cannot be computed (NaN or +Infinity logits, an all-masked row) has an
     * `error` and the others are still written. `removals`, (sequence, from) pairs, are dropped from
     * the KV cache first, on the same thread (rollbacks that arrived while another decode ran).
     * `shared`, (batch index, sequence) pairs, adds sequences to a token beyond its `sequences` entry
     * (a token tree's node on several branches; unified KV caches only).
     */
    decode(
        tokens: Int32Array,
        sequences: Int32Array,
        positions: Int32Array,
        groups: readonly NativeOutputGroup[],
        removals?: Int32Array,
        shared?: Int32Array
    ): Promise<NativeDecodeResult>;
    /**
     * The same decode on the calling thread (blocking the event loop for its duration), for calls
     * cheaper than a thread hop; null, having done nothing, when another decode holds the CPU.
     */
    decodeNow(
        tokens: Int32Array,
        sequences: Int32Array,
        positions: Int32Array,
        groups: readonly NativeOutputGroup[],
        removals?: Int32Array,
        shared?: Int32Array
    ): NativeDecodeResult | null;
    /**
     * Drops positions [from, to) of `sequence` from the KV cache; to = −1 means to the end. Like clear,
     * it throws, rather than wait, while a decode of this context runs (pass `removals` to decode then).
     */
    removeTokens(sequence: number, from: number, to: number): boolean;
    /**
     * `destination` also holds `source`'s cells at positions [from, to) (to = −1: to the end), sharing
     * them (llama_memory_seq_cp): how a token tree's branches share their prefix. Unified KV caches
     * only (a RangeError otherwise); like removeTokens it throws while a decode of this context runs.
     */
    copyTokens(source: number, destination: number, from: number, to: number): void;
    clear(): void;
    /**
     * A copy of `sequence`'s KV cells (positions and K/V rows; llama_state_seq_get_data) in host
     * memory, for restoreSequence; with captureLayers, the layer rows captured for those positions
     * follow (3 × hidden size × 4 bytes per position). Like removeTokens it throws, rather than wait,
     * while a decode of this context runs.
     */
    saveSequence(sequence: number): Uint8Array;
    /**
     * Replaces what `sequence` holds by a saveSequence state of this context or of another context of
     * the same model (own or shared: the KV stream layout is converted); with captureLayers, the tap
     * then holds the rows saved with it (none from a state without this tap's layers: an EAGLE-3 head
     * on the sequence does not draft until the target decodes again from 0). Throws, rather than wait,
     * while a decode of this context runs; a state that is not one (a RangeError) leaves the sequence
     * as it was, one llama.cpp refuses (another model's: an Error) leaves it empty.
     */
    restoreSequence(sequence: number, data: Uint8Array): void;
    /** Idempotent. A decode already running completes (the context is freed after it); one not yet started is refused. */
    dispose(): void;
}

const packageBuildDirectory = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "native", "build");

/**
 * The folder the addon builds are looked for in: the SPECGATE_NATIVE_DIR environment variable (a
 * build made or unpacked elsewhere), else the package's native/build/.
 */
export function nativeBuildDirectory(): string {
    const fromEnvironment = process.env.SPECGATE_NATIVE_DIR;
    return fromEnvironment === undefined || fromEnvironment === "" ? packageBuildDirectory : fromEnvironment;
}

/** Where scripts/buildNativeBackend.mjs puts an addon build: native/build/ for the CPU one, native/build/<gpu>/ for a GPU one. */
export function nativeAddonPathOf(build: NativeBuild): string {
    const directory = nativeBuildDirectory();
    return build === "cpu" ? join(directory, "specgate_native.node") : join(directory, build, "specgate_native.node");
}

/** The CPU addon's path in the package: native/build/specgate_native.node. */
export const nativeAddonPath = join(packageBuildDirectory, "specgate_native.node");

/** Each addon file tried, by path: loaded once (a process cannot unload one). */
const loaded = new Map<string, {addon: NativeAddon} | {error: string}>();

function load(build: NativeBuild): {addon: NativeAddon} | {error: string} {
    const path = nativeAddonPathOf(build);
    const cached = loaded.get(path);
    if (cached !== undefined) return cached;
    let result: {addon: NativeAddon} | {error: string};
    if (!existsSync(path)) {
        result = {
            error: `the ${build === "cpu" ? "" : `${build} `}native backend is not built (${path} is missing; run \`${buildCommandOf(build)}\`, which needs git, cmake and a C++ compiler)`
        };
    } else {
        try {
            const addon = createRequire(import.meta.url)(path) as NativeAddon;
            guardExitAgainstGrammarJobs(addon);
            result = {addon};
        } catch (error) {
            result = {
                error: `the ${build === "cpu" ? "" : `${build} `}native backend does not load here (${(error as Error).message}); \`${buildCommandOf(build)}\` rebuilds it`
            };
        }
    }
    loaded.set(path, result);
    return result;
}

/** The command that builds an addon build in a user's project (the package's `specgate build`). */
export function buildCommandOf(build: NativeBuild): string {
    return build === "cpu" ? "npx specgate build" : `npx specgate build --gpu ${build}`;
}

/** Why the addon build (default: the CPU one) cannot be used here, naming the command that builds it; undefined when it loads. */
export function nativeBackendProblem(build: NativeBuild = "cpu"): string | undefined {
    const result = load(build);
    return "error" in result ? result.error : undefined;
}

/** True when the addon build (default: the CPU one) is present and loads on this machine. */
export function nativeBackendAvailable(build: NativeBuild = "cpu"): boolean {
    return "addon" in load(build);
}

/** True when the build's file exists (whether or not it loads here). */
export function nativeBuildPresent(build: NativeBuild): boolean {
    return existsSync(nativeAddonPathOf(build));
}

/** The addon build (default: the CPU one), or a NativeBackendUnavailableError saying why not. */
export function nativeAddon(build: NativeBuild = "cpu"): NativeAddon {
    const result = load(build);
    if ("error" in result) throw new NativeBackendUnavailableError(result.error);
    return result.addon;
}

/**
 * The first addon build that loads here (the CPU one, then the GPU ones), undefined when none does.
 * Every build carries the same CPU code beside its compute backend.
 */
export function firstAvailableBuild(): NativeBuild | undefined {
    return nativeBuilds.find((build) => nativeBackendAvailable(build));
}

/**
 * An addon for work every build does alike on the CPU (converting a JSON schema to a grammar): the
 * first that loads, so a machine with only a GPU build needs no CPU one. A
 * NativeBackendUnavailableError saying how to build the CPU addon when none loads.
 */
export function anyNativeAddon(): NativeAddon {
    return nativeAddon(firstAvailableBuild() ?? "cpu");
}

/** Loads a GGUF on an addon; llama.cpp's refusal (a corrupt or unsupported file) becomes a ModelLoadError naming the path. */
export function openNativeModel(addon: NativeAddon, path: string, gpuLayers: number): NativeModelHandle {
    try {
        return new addon.NativeModel(path, {gpuLayers});
    } catch (error) {
        throw new ModelLoadError("corrupt", (error as Error).message, path);
    }
}
