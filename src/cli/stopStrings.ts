import {InvalidInputError} from "../errors.js";

/**
 * Stop strings from the command line, where a blank line is hard to type: `\n`, `\t` and `\\` are
 * decoded, so `--stop '\n\n'` stops at a blank line. Empty strings are refused (they would stop
 * before the first token).
 */
export function stopStrings(values: readonly string[] | undefined, field = "--stop"): string[] {
    return (values ?? []).map((value) => {
        const decoded = value.replace(/\\(n|t|\\)/g, (_match, code: string) => (code === "n" ? "\n" : code === "t" ? "\t" : "\\"));
        if (decoded === "") throw new InvalidInputError("must not be empty", field);
        return decoded;
    });
}
