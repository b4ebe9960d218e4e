import {InvalidInputError} from "../errors.js";

/** Runs a write to a user-named destination, turning a file-system failure into an error that names the flag. */
export async function writeOutputFile<T>(write: () => Promise<T>, destination: string, flag: string): Promise<T> {
    try {
        return await write();
    } catch (error) {
        throw new InvalidInputError(`cannot write ${destination} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`, flag);
    }
}
