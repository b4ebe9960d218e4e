import {resolve} from "node:path";
import {SpecgateError, InvalidInputError} from "../errors.js";

/**
 * Runs a write to a user-named destination (a file, or a folder the write fills), turning a
 * file-system failure on that destination into an error that names the flag. Failures elsewhere —
 * reading an input, a typed error — pass through unchanged.
 */
export async function writeOutputFile<T>(write: () => Promise<T>, destination: string, flag: string): Promise<T> {
    try {
        return await write();
    } catch (error) {
        if (error instanceof SpecgateError || !concernsDestination(error, destination)) throw error;
        throw new InvalidInputError(
            `cannot write ${destination} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
            flag
        );
    }
}

/** A file-system error on the destination itself, on a file inside it, or on a sibling temporary file of it. */
function concernsDestination(error: unknown, destination: string): boolean {
    if (!(error instanceof Error)) return false;
    const failed = (error as NodeJS.ErrnoException).path;
    if (failed === undefined) return typeof (error as NodeJS.ErrnoException).code === "string";
    const target = resolve(destination);
    const path = resolve(failed);
    return path === target || path.startsWith(`${target}/`) || path.startsWith(`${target}.`);
}
