import {randomBytes} from "node:crypto";
import {rename, rm, writeFile} from "node:fs/promises";

/**
 * Write a whole file so that readers see either the old content or the new, never a torn file:
 * write a sibling temp file, then rename over the target (atomic on POSIX file systems).
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
    const temporaryPath = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    try {
        await writeFile(temporaryPath, data, {flush: true});
        await rename(temporaryPath, path);
    } catch (error) {
        await rm(temporaryPath, {force: true});
        throw error;
    }
}
