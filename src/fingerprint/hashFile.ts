import {createHash} from "node:crypto";
import {createReadStream} from "node:fs";
import {stat} from "node:fs/promises";
import {resolve} from "node:path";
import {InvalidInputError} from "../errors.js";

const cache = new Map<string, {size: number; modified: number; digest: Promise<string>}>();

/**
 * Hex sha256 of a file's bytes, read as a stream (model files are gigabytes). Results are cached by
 * absolute path, size and modification time, so a fingerprint per canary run does not reread them
 * and a replaced file is hashed afresh.
 */
export async function hashFile(path: string): Promise<string> {
    const absolute = resolve(path);
    let info;
    try {
        info = await stat(absolute);
    } catch (error) {
        throw new InvalidInputError(
            `cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
            "fingerprint"
        );
    }
    const cached = cache.get(absolute);
    if (cached !== undefined && cached.size === info.size && cached.modified === info.mtimeMs) return cached.digest;
    const digest = new Promise<string>((resolveDigest, reject) => {
        const hash = createHash("sha256");
        createReadStream(absolute)
            .on("data", (chunk) => hash.update(chunk))
            .on("error", reject)
            .on("end", () => resolveDigest(hash.digest("hex")));
    });
    cache.set(absolute, {size: info.size, modified: info.mtimeMs, digest});
    digest.catch(() => cache.delete(absolute));
    return digest;
}
