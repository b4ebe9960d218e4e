import {readFile} from "node:fs/promises";
import {defaultBenchPrompts} from "../benchRunner/defaultPrompts.js";
import {repetitivePrompts} from "../benchRunner/repetitivePrompts.js";
import {InvalidInputError, MalformedRowError} from "../errors.js";

/** Prompts from a file: JSONL rows with a "prompt" field, or one prompt per non-empty line. */
export async function loadPrompts(source: string): Promise<string[]> {
    if (source === "battery") return [...defaultBenchPrompts];
    if (source === "repetitive") return repetitivePrompts().map((prompt) => prompt.prompt);
    let text: string;
    try {
        text = await readFile(source, "utf8");
    } catch (error) {
        throw new InvalidInputError(`cannot read prompts: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, source);
    }
    const prompts = text
        .split("\n")
        .map((line, index) => {
            if (line.trim() === "") return undefined;
            if (!line.trimStart().startsWith("{")) return line;
            // The same errors as a battery file's: FILE:LINE: what is wrong (parseJsonLines, parseBatteryRows).
            let row: {prompt?: unknown};
            try {
                row = JSON.parse(line) as {prompt?: unknown};
            } catch (error) {
                throw new MalformedRowError(source, index + 1, `not valid JSON (${(error as Error).message})`);
            }
            if (typeof row.prompt !== "string")
                throw new MalformedRowError(source, index + 1, `prompt: ${row.prompt === undefined ? "is missing" : "must be a string"}`);
            return row.prompt;
        })
        .filter((prompt): prompt is string => prompt != null);
    if (prompts.length === 0) throw new InvalidInputError("no prompts", source);
    return prompts;
}
