import {existsSync, readFileSync} from "node:fs";
import {createRequire} from "node:module";
import {dirname, join} from "node:path";
import {fileURLToPath} from "node:url";

/** The versions of what the embedded engine is made of, as `specgate info` prints them; null where unknown. */
export interface EngineVersions {
    readonly specgate: string;
    readonly nodeLlamaCpp: string | null;
    /** The llama.cpp release node-llama-cpp bundles: its prebuilt binaries and the source the native addon builds. */
    readonly llamaCppRelease: string | null;
}

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

function readJson(path: string): Record<string, unknown> | null {
    try {
        return JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
    } catch {
        return null;
    }
}

/** node-llama-cpp's package folder, wherever npm put it (resolved, not assumed); null when it is not installed. */
export function nodeLlamaCppDirectory(): string | null {
    try {
        let directory = dirname(createRequire(join(root, "package.json")).resolve("node-llama-cpp"));
        while (!existsSync(join(directory, "package.json")) && dirname(directory) !== directory) directory = dirname(directory);
        return directory;
    } catch {
        return null;
    }
}

/** specgate's, node-llama-cpp's and the bundled llama.cpp release's versions, read from their package files. */
export function engineVersions(): EngineVersions {
    const nodeLlamaCpp = nodeLlamaCppDirectory();
    return {
        specgate: (readJson(join(root, "package.json"))?.version as string | undefined) ?? "unknown",
        nodeLlamaCpp:
            nodeLlamaCpp === null ? null : ((readJson(join(nodeLlamaCpp, "package.json"))?.version as string | undefined) ?? null),
        llamaCppRelease:
            nodeLlamaCpp === null
                ? null
                : ((readJson(join(nodeLlamaCpp, "llama", "llama.cpp.info.json"))?.tag as string | undefined) ?? null)
    };
}
