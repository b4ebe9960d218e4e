/**
 * The exit-code contract every specgate command follows. A command uses only the codes that can
 * happen to it, and its --help lists those; the program's --help lists them all.
 */
export const ExitCode = {
    /** The command did its work, and its verdict (where it gives one) passed. */
    success: 0,
    /** The command worked and its verdict failed: drift, divergent, no qualifying setting. */
    verdictFailed: 1,
    /** Bad usage or bad input: an unknown flag, a value out of range, a missing or unreadable file, an unwritable output. */
    badInput: 2,
    /** Too few samples for a verdict either way. */
    insufficientData: 3,
    /** The comparison could not be made: a decode path failed its requests, or nothing was compared. */
    couldNotCompare: 4,
    /** A bug in specgate: the stack trace follows; please report it. */
    internalError: 70,
    /** Stopped by SIGINT (Ctrl-C), 128 + 2: what was completed is on stderr; no output file is left half-written. */
    interrupted: 130,
    /** Stopped by SIGTERM, 128 + 15, as for SIGINT. */
    terminated: 143
} as const;

export type ExitCodeName = keyof typeof ExitCode;

const meanings: Readonly<Record<ExitCodeName, string>> = {
    success: "success (the verdict, where there is one, passed)",
    verdictFailed: "the verdict failed (drift, divergent, no qualifying setting)",
    badInput: "bad usage or bad input (nothing was run, or nothing was written)",
    insufficientData: "insufficient data for a verdict",
    couldNotCompare: "could not compare (a decode path failed, or no prompt was compared)",
    internalError: "internal error (a bug: please report the stack trace)",
    interrupted: "interrupted by SIGINT (Ctrl-C): what was completed is printed; no partial output file is left",
    terminated: "terminated by SIGTERM, as for SIGINT"
};

/** The exit codes a command can end with, one per line, as a help-text paragraph; `details` replaces a generic meaning. */
export function exitCodeHelp(names: readonly ExitCodeName[], details: Partial<Record<ExitCodeName, string>> = {}): string {
    const width = Math.max(2, ...names.map((name) => String(ExitCode[name]).length)) + 1;
    return `\nExit codes:\n${names.map((name) => `  ${String(ExitCode[name]).padEnd(width)}${details[name] ?? meanings[name]}`).join("\n")}\n`;
}
