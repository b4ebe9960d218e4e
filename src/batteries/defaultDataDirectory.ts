import {dirname, resolve} from "node:path";
import {fileURLToPath} from "node:url";

/**
 * Where the shared datasets live unless a caller says otherwise: $SPECGATE_DATA_DIR, else
 * `../shared/data` beside the repository. This file sits two levels below the repository root both
 * as source (src/batteries) and compiled (dist/batteries), so one relative path serves both.
 */
export function defaultDataDirectory(): string {
    const fromEnvironment = process.env.SPECGATE_DATA_DIR;
    if (fromEnvironment != null && fromEnvironment !== "") return resolve(fromEnvironment);
    const repositoryRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
    return resolve(repositoryRoot, "..", "shared", "data");
}
