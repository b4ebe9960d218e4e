import {readFile} from "node:fs/promises";
import {defaultBenchPrompts} from "../bench/defaultPrompts.js";
import {repetitivePrompts} from "../bench/repetitivePrompts.js";
import {InvalidInputError} from "../errors.js";

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
            try {
                const row = JSON.parse(line) as {prompt?: unknown};
                if (typeof row.prompt !== "string") throw new Error('no string field "prompt"');
                return row.prompt;
            } catch (error) {
                throw new InvalidInputError(`line ${index + 1}: ${(error as Error).message}`, source);
            }
        })
        .filter((prompt): prompt is string => prompt != null);
    if (prompts.length === 0) throw new InvalidInputError("no prompts", source);
    return prompts;
}
