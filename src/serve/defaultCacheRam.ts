import {totalmem} from "node:os";
import {readModelHeader} from "../backend/readModelHeader.js";
import {ModelLoadError} from "../errors.js";

/** The most host memory saved prompt states hold by default: llama-server's --cache-ram default. */
export const cacheRamCeilingBytes = 8 * 1024 ** 3;
/** How many of the target's full-context KV states the default holds at most. */
export const cacheRamStates = 64;
/** The default takes at most this share of the machine's memory. */
export const cacheRamMachineShare = 1 / 8;

/**
 * --cache-ram's default: the least of 8 GiB, an eighth of the machine's memory, and 64 of the target's
 * full-context KV states (one sequence's KV cache at the context size), so a small model keeps megabytes
 * where llama-server's fixed 8 GiB would let its saved states grow for as long as new prompts come.
 * Without a state size (a backend without a GGUF, or a GGUF without its attention sizes) the first
 * two bound it.
 */
export function defaultCacheRamBytes(fullContextStateBytes: number | undefined, machineBytes = totalmem()): number {
    const bounds = [cacheRamCeilingBytes, Math.floor(machineBytes * cacheRamMachineShare)];
    if (fullContextStateBytes !== undefined && fullContextStateBytes > 0) bounds.push(cacheRamStates * fullContextStateBytes);
    return Math.min(...bounds);
}

/**
 * The bytes of one sequence's KV cache at `contextSize` tokens (llama.cpp's default F16 cache), from the
 * GGUF's layer and attention sizes; undefined when the file is not a GGUF or does not state them.
 */
export function fullContextStateBytes(ggufPath: string, contextSize: number): number | undefined {
    try {
        const perToken = readModelHeader(ggufPath).kvCacheBytesPerToken;
        return perToken === undefined ? undefined : perToken * contextSize;
    } catch (error) {
        if (error instanceof ModelLoadError) return undefined;
        throw error;
    }
}
