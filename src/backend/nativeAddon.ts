import {existsSync} from "node:fs";
import {createRequire} from "node:module";
import {dirname, join} from "node:path";
import {fileURLToPath} from "node:url";
import {NativeBackendUnavailableError} from "../errors.js";
import type {EvaluationSplit} from "./ModelBackend.js";

/** What native/src/addon.cpp exports (see that file for the threading and copying rules). */
export interface NativeAddon {
    NativeModel: new (path: string) => NativeModelHandle;
    NativeContext: new (model: NativeModelHandle, options: NativeContextOptions) => NativeContextHandle;
}

export interface NativeModelHandle {
    readonly vocabularySize: number;
    readonly bosToken: number | undefined;
    readonly eosToken: number | undefined;
    tokenize(text: string, parseSpecial: boolean): Int32Array;
    detokenize(tokens: Int32Array): string;
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
}


/** Sampler settings for Distribution mode (SamplingOptions). */
export interface NativeSampling {
    temperature: number;
    topK: number;
    topP: number;
    minP: number;
    /** Sampler rows over the first `limit` ids only (the rest are 0); absent: the whole vocabulary. */
    limit?: number;
}

/** What a decode returns per requested output: nothing, the logit row, or the argmax id. */
export const NativeOutputMode = {None: 0, Logits: 1, Argmax: 2, Distribution: 3} as const;
export type NativeOutputMode = (typeof NativeOutputMode)[keyof typeof NativeOutputMode];

/**
 * The rows one submitter wants from a decode. Row r of `destination` belongs to `outputs[r]` (a batch
 * index): outputs × vocabulary floats (Float32Array, or Float64Array widened by the worker thread) for
 * Logits, one id per output (Int32Array) for Argmax; for Distribution a Float64Array of 2 × outputs ×
 * vocabulary: the logit rows, then the sampler rows for `sampling`.
 */
export interface NativeOutputGroup {
    outputs: Int32Array;
    mode: NativeOutputMode;
    destination?: Float32Array | Float64Array | Int32Array;
    sampling?: NativeSampling;
}

/** A decode's time split, with each output group's share and, for Distribution, its row error. */
export interface NativeDecodeResult extends EvaluationSplit {
    groups: Array<{transferMilliseconds: number; samplingMilliseconds: number; error?: string}>;
}

export interface NativeContextHandle {
    /**
     * One llama_decode of a batch that may span several sequences; then each group's rows. A group
     * whose sampler rows cannot be computed (NaN or +Infinity logits, an all-masked row) has an
     * `error` and the others are still written. `removals`, (sequence, from) pairs, are dropped from
     * the KV cache first, on the same thread (rollbacks that arrived while another decode ran).
     */
    decode(tokens: Int32Array, sequences: Int32Array, positions: Int32Array, groups: readonly NativeOutputGroup[], removals?: Int32Array): Promise<NativeDecodeResult>;
    /**
     * The same decode on the calling thread (blocking the event loop for its duration), for calls
     * cheaper than a thread hop; null, having done nothing, when another decode holds the CPU.
     */
    decodeNow(tokens: Int32Array, sequences: Int32Array, positions: Int32Array, groups: readonly NativeOutputGroup[], removals?: Int32Array): NativeDecodeResult | null;
    /** Drops positions [from, to) of `sequence` from the KV cache; to = −1 means to the end. */
    removeTokens(sequence: number, from: number, to: number): boolean;
    clear(): void;
    dispose(): void;
}

/** Where scripts/buildNativeBackend.mjs puts the addon, relative to the package root. */
export const nativeAddonPath = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "native", "build", "specgate_native.node");

let loaded: {addon: NativeAddon} | {error: string} | undefined;

function load(): {addon: NativeAddon} | {error: string} {
    if (loaded !== undefined) return loaded;
    if (!existsSync(nativeAddonPath)) {
        loaded = {error: `the native backend is not built (${nativeAddonPath} is missing; run \`npm run build:native\`, which needs cmake, git and a C++ compiler)`};
        return loaded;
    }
    try {
        loaded = {addon: createRequire(import.meta.url)(nativeAddonPath) as NativeAddon};
    } catch (error) {
        loaded = {error: `the native backend does not load here: ${(error as Error).message}`};
    }
    return loaded;
}

/** True when the addon is built and loads on this machine. */
export function nativeBackendAvailable(): boolean {
    return "addon" in load();
}

/** The addon, or a NativeBackendUnavailableError saying why not. */
export function nativeAddon(): NativeAddon {
    const result = load();
    if ("error" in result) throw new NativeBackendUnavailableError(result.error);
    return result.addon;
}
