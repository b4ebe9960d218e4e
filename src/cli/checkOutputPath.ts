import {type Stats, constants} from "node:fs";
import {access, stat} from "node:fs/promises";
import {dirname, resolve} from "node:path";
import {InvalidInputError} from "../errors.js";

/**
 * Checks before any work starts that an output can be written where the user asked, so a long run
 * never ends in a failed write. A file output needs an existing, writable folder and must not be a
 * folder itself; "-" (stdout) always passes. The write itself still reports its own failure.
 */
export async function checkOutputFile(path: string | undefined, flag: string): Promise<void> {
    if (path === undefined || path === "-") return;
    if (path === "") throw new InvalidInputError("is empty: expected a file path", flag);
    const existing = await statOrNull(path, flag);
    if (existing?.isDirectory()) throw new InvalidInputError(`${path} is a folder; expected a file to write`, flag);
    if (existing != null) {
        await assertWritable(path, `cannot write ${path}: the file is not writable`, flag);
        return;
    }
    const folder = dirname(resolve(path));
    const parent = await statOrNull(folder, flag);
    if (parent == null) throw new InvalidInputError(`cannot write ${path}: the folder ${folder} does not exist`, flag);
    if (!parent.isDirectory()) throw new InvalidInputError(`cannot write ${path}: ${folder} is not a folder`, flag);
    await assertWritable(folder, `cannot write ${path}: the folder ${folder} is not writable`, flag);
}

/**
 * Checks that a folder output can be used: an existing writable folder, or a path whose nearest
 * existing ancestor is a writable folder (the command creates the rest).
 */
export async function checkOutputFolder(path: string | undefined, flag: string): Promise<void> {
    if (path === undefined) return;
    if (path === "") throw new InvalidInputError("is empty: expected a folder", flag);
    let current = resolve(path);
    for (;;) {
        const existing = await statOrNull(current, flag);
        if (existing != null) {
            if (!existing.isDirectory())
                throw new InvalidInputError(
                    current === resolve(path) ? `${path} is a file; expected a folder` : `cannot create ${path}: ${current} is a file`,
                    flag
                );
            await assertWritable(
                current,
                current === resolve(path) ? `${path} is not writable` : `cannot create ${path}: ${current} is not writable`,
                flag
            );
            return;
        }
        const parent = dirname(current);
        if (parent === current) throw new InvalidInputError(`cannot create ${path}`, flag);
        current = parent;
    }
}

async function statOrNull(path: string, flag: string): Promise<Stats | null> {
    try {
        return await stat(path);
    } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ENOENT") return null;
        // ENOTDIR: a path component is a file.
        if (code === "ENOTDIR") throw new InvalidInputError(`cannot use ${path}: a part of the path is a file`, flag);
        throw error;
    }
}

async function assertWritable(path: string, message: string, flag: string): Promise<void> {
    try {
        await access(path, constants.W_OK);
    } catch {
        throw new InvalidInputError(message, flag);
    }
}
