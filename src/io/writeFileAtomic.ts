import {randomBytes} from "node:crypto";
import {closeSync, fdatasync, openSync, writeFile as writeToDescriptor} from "node:fs";
import {rename, rm} from "node:fs/promises";
import {promisify} from "node:util";
import {trackTemporaryFile} from "./temporaryFiles.js";

const writeDescriptor = promisify(writeToDescriptor);
const syncDescriptor = promisify(fdatasync);

/**
 * Write a whole file so that readers see either the old content or the new, never a torn file:
 * write a sibling temp file, then rename over the target (atomic on POSIX file systems).
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
    const temporaryPath = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    // An interrupted process removes it before exiting (removeTemporaryFiles). It is created here,
    // synchronously, and then written through its descriptor, never reopened by name: once removed
    // it cannot reappear from a write still in flight.
    const descriptor = openSync(temporaryPath, "wx");
    const untrack = trackTemporaryFile(temporaryPath);
    try {
        try {
            await writeDescriptor(descriptor, data);
            await syncDescriptor(descriptor);
        } finally {
            closeSync(descriptor);
        }
        await rename(temporaryPath, path);
    } catch (error) {
        await rm(temporaryPath, {force: true});
        throw error;
    } finally {
        untrack();
    }
}
