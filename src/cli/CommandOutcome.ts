import type {ModelBackend} from "../backend/ModelBackend.js";
import type {GpuChoice} from "../backend/gpuChoice.js";
import {loadModelBackend} from "../backend/loadModelBackend.js";
import {InsufficientDataError, SpecgateError} from "../errors.js";
import {trainedContextWarning} from "./contextSizeOption.js";
import {ExitCode} from "./exitCodes.js";
import {cliErrorMessage} from "./flagForField.js";

/** What a command's in-process runner returns; the registered action writes it out and sets the exit code. */
export interface CommandOutcome {
    readonly exitCode: number;
    readonly stdout: string;
    readonly stderr: string;
}

/** How a command opens a model; tests substitute in-memory backends. */
export type OpenModel = (path: string, threads: number) => Promise<ModelBackend>;

/** Opens a GGUF on the default backend (native where built, or SPECGATE_BACKEND). */
export const openDefaultModel: OpenModel = (path, threads) => loadModelBackend(path, {threads});

/** Where a command's --gpu and --gpu-layers put its models, and the context --context-size gives them. */
export interface ModelPlacement {
    readonly gpu?: GpuChoice;
    readonly gpuLayers?: number;
    readonly contextSize?: number;
}

/**
 * Opens GGUFs on the default backend, on the GPU build and layers the command's options name, with
 * its --context-size; warns on stderr (as `command`) when that exceeds a model's training context.
 */
export function openModelOn(placement: ModelPlacement, command = "specgate"): OpenModel {
    return async (path, threads) => {
        const model = await loadModelBackend(path, {
            threads,
            gpu: placement.gpu,
            gpuLayers: placement.gpuLayers,
            contextSize: placement.contextSize
        });
        process.stderr.write(trainedContextWarning(command, path, placement.contextSize));
        return model;
    };
}

/** A Node file-system error (ENOENT, EACCES, EISDIR…): the user named a path that cannot be used. */
export function isFileSystemError(error: unknown): error is NodeJS.ErrnoException {
    return error instanceof Error && typeof (error as NodeJS.ErrnoException).code === "string";
}

/** A message on one line, as every specgate error is printed. */
export function oneLine(message: string): string {
    return message.replace(/\s*\n\s*/g, " ");
}

/**
 * Bad input — a typed SpecgateError, or a file-system error — becomes exit code 2 and one stderr
 * line that leads with what is wrong (an InsufficientDataError exit code 3); anything else is a bug
 * and is rethrown.
 */
export function badInputOutcome(commandName: string, error: unknown): CommandOutcome {
    if (error instanceof InsufficientDataError)
        return {exitCode: ExitCode.insufficientData, stdout: "", stderr: `${commandName}: INSUFFICIENT DATA: ${oneLine(error.message)}\n`};
    if (error instanceof SpecgateError || isFileSystemError(error))
        return {exitCode: ExitCode.badInput, stdout: "", stderr: `${commandName}: ${oneLine(cliErrorMessage(error, commandName))}\n`};
    throw error;
}

/** Hands a command's outcome to the process: its output streams and exit code (the one place commands touch them). */
export function emitOutcome(outcome: CommandOutcome): void {
    process.stdout.write(outcome.stdout);
    process.stderr.write(outcome.stderr);
    process.exitCode = outcome.exitCode;
}
