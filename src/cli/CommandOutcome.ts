import type {ModelBackend} from "../backend/ModelBackend.js";
import {NodeLlamaCppBackend} from "../backend/NodeLlamaCppBackend.js";
import {SpecgateError} from "../errors.js";

/** What a command's in-process runner returns; the registered action writes it out and sets the exit code. */
export interface CommandOutcome {
    readonly exitCode: number;
    readonly stdout: string;
    readonly stderr: string;
}

/** How a command opens a model; tests substitute in-memory backends. */
export type OpenModel = (path: string, threads: number) => Promise<ModelBackend>;

export const openNodeLlamaCppModel: OpenModel = (path, threads) => NodeLlamaCppBackend.load(path, {threads});

/**
 * Bad input — a typed SpecgateError, or a file-system error with a code (ENOENT, EACCES…) — becomes
 * exit code 2 and one stderr line naming the error; anything else is a bug and is rethrown.
 */
export function badInputOutcome(commandName: string, error: unknown): CommandOutcome {
    if (error instanceof SpecgateError || (error instanceof Error && typeof (error as NodeJS.ErrnoException).code === "string"))
        return {exitCode: 2, stdout: "", stderr: `${commandName}: ${error.name}: ${error.message.replace(/\s*\n\s*/g, " ")}\n`};
    throw error;
}

/** Hands a command's outcome to the process: its output streams and exit code (the one place commands touch them). */
export function emitOutcome(outcome: CommandOutcome): void {
    process.stdout.write(outcome.stdout);
    process.stderr.write(outcome.stderr);
    process.exitCode = outcome.exitCode;
}
