import {totalmem} from "node:os";
import {InvalidInputError} from "../errors.js";

/** The sizing options every backend takes (see NativeBackendOptions, NodeLlamaCppBackendOptions). */
export interface BackendSizeOptions {
    readonly contextSize?: number;
    readonly batchSize?: number;
    readonly maxIdleSequences?: number;
}

export interface BackendSizes {
    /** Tokens per sequence: the option, else the model's trained context capped at 4096. */
    readonly contextSize: number;
    /** Most tokens in one decode: the option, else contextSize (an evaluate is one call). */
    readonly batchSize: number;
    /** Contexts pooled after their sequence is disposed: the option, else 64. */
    readonly maxIdleSequences: number;
}

export function positiveInteger(value: number, field: string): number {
    if (!Number.isSafeInteger(value) || value < 1) throw new InvalidInputError(`must be a positive integer, got ${value}`, field);
    return value;
}

/**
 * Resolves and checks a backend's sizes against the model's trained context length and, where the
 * GGUF gives its sizes, against this machine's memory: a context whose KV cache alone would not fit
 * is refused here, in milliseconds, instead of failing inside llama.cpp after a long allocation.
 */
export function backendSizes(
    options: BackendSizeOptions,
    trainedContextLength: number | undefined,
    kvCacheBytesPerToken?: number,
    memoryBytes = totalmem()
): BackendSizes {
    const contextSize = positiveInteger(options.contextSize ?? Math.min(trainedContextLength ?? 4096, 4096), "contextSize");
    if (kvCacheBytesPerToken !== undefined && contextSize * kvCacheBytesPerToken > memoryBytes) {
        const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(bytes < 2 ** 30 ? 2 : 0)} GiB`;
        throw new InvalidInputError(
            `${contextSize} tokens need a ${gib(contextSize * kvCacheBytesPerToken)} KV cache per sequence, more than this machine's ` +
                `${gib(memoryBytes)} of memory (at most ${Math.floor(memoryBytes / kvCacheBytesPerToken)} tokens; the model was trained on ${trainedContextLength ?? "an unstated number of"})`,
            "contextSize"
        );
    }
    const batchSize = positiveInteger(options.batchSize ?? contextSize, "batchSize");
    const maxIdleSequences = options.maxIdleSequences ?? 64;
    if (!Number.isSafeInteger(maxIdleSequences) || maxIdleSequences < 0)
        throw new InvalidInputError(`must be a non-negative integer, got ${maxIdleSequences}`, "maxIdleSequences");
    return {contextSize, batchSize, maxIdleSequences};
}
