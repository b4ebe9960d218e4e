import {rmSync} from "node:fs";

/** Temporary files being written right now (a write's sibling file before its rename over the target). */
const pending = new Set<string>();

/** Records a temporary file as in progress; the returned function forgets it (after its rename or removal). */
export function trackTemporaryFile(path: string): () => void {
    pending.add(path);
    return () => pending.delete(path);
}

/**
 * Removes every temporary file still being written, synchronously: what an interrupted process does
 * before it exits, so that no partial file is left beside the outputs (targets are only ever
 * replaced by a complete file's rename, so they are whole or absent).
 */
export function removeTemporaryFiles(): void {
    for (const path of pending) rmSync(path, {force: true});
    pending.clear();
}
