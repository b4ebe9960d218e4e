import {totalmem} from "node:os";
import {readModelHeader} from "../backend/readModelHeader.js";
import {ModelLoadError} from "../errors.js";

/** The most host memory saved prompt states hold by default: llama-server's --cache-ram default. */
export const cacheRamCeilingBytes = 8 * 1024 ** 3;
/** How many of the target's full-context KV states the default holds at most. */
export const cacheRamStates = 64;
/** The target layers an EAGLE-3 head reads (their rows are saved with a state). */
const eagle3TappedLayers = 3;
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
 * The bytes of one sequence's saved state at `contextSize` tokens: its KV cache (llama.cpp's default
 * F16 cache), from the GGUF's layer and attention sizes, and with `layerRows` (an EAGLE-3 head drafts)
 * the target's layer rows saved with it (a token and three rows of the hidden size, 4-byte floats);
 * undefined when the file is not a GGUF or does not state them.
 */
export function fullContextStateBytes(ggufPath: string, contextSize: number, layerRows = false): number | undefined {
    try {
        const header = readModelHeader(ggufPath);
        const kv = header.kvCacheBytesPerToken;
        if (kv === undefined || (layerRows && header.embeddingLength === undefined)) return undefined;
        const rows = layerRows ? 4 + eagle3TappedLayers * header.embeddingLength! * 4 : 0;
        return (kv + rows) * contextSize;
    } catch (error) {
        if (error instanceof ModelLoadError) return undefined;
        throw error;
    }
}
