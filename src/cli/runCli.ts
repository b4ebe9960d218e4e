import {CommanderError} from "commander";
import {InsufficientDataError, SpecgateError} from "../errors.js";
import {commandPath, createProgram} from "./createProgram.js";
import {ExitCode} from "./exitCodes.js";
import {cliErrorMessage} from "./flagForField.js";
import {isFileSystemError, oneLine} from "./CommandOutcome.js";
import {interrupted, reportInterruption, setInterruptedCommand} from "./interrupts.js";

/**
 * Runs the CLI on `args` (without node and the script) and returns the exit code: the one place
 * errors become messages and exit codes (see exitCodes.ts). Usage errors, typed errors and
 * file-system errors are bad input (2), one line on stderr (an InsufficientDataError is exit 3,
 * insufficient data); anything else is a bug (70) and keeps
 * its stack trace. Commands that report a verdict set process.exitCode; it is read and cleared.
 * A command stopped by SIGINT/SIGTERM ends with 130/143, whatever it threw (src/cli/interrupts.ts).
 */
export async function runCli(args: readonly string[]): Promise<number> {
    process.exitCode = undefined;
    // Messages name the command that failed ("specgate bench: …") once commander has picked it.
    let failing = "specgate";
    try {
        await createProgram()
            .hook("preAction", (_program, action) => {
                failing = commandPath(action);
                setInterruptedCommand(failing);
            })
            .parseAsync([...args], {from: "user"});
        if (interrupted()) return reportInterruption();
        return Number(process.exitCode ?? ExitCode.success);
    } catch (error) {
        if (interrupted()) return reportInterruption();
        if (error instanceof CommanderError)
            // commander has already written the message (or the help, for a missing subcommand).
            return error.exitCode === 0 ? ExitCode.success : ExitCode.badInput;
        if (error instanceof InsufficientDataError) {
            process.stderr.write(`${failing}: INSUFFICIENT DATA: ${oneLine(error.message)}\n`);
            return ExitCode.insufficientData;
        }
        if (error instanceof SpecgateError || isFileSystemError(error)) {
            process.stderr.write(`${failing}: ${oneLine(cliErrorMessage(error, failing))}\n`);
            return ExitCode.badInput;
        }
        process.stderr.write(
            `${failing}: internal error (please report it): ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`
        );
        return ExitCode.internalError;
    } finally {
        process.exitCode = undefined;
    }
}
