import {readFile} from "node:fs/promises";
import {InvalidInputError} from "../errors.js";

/** Read and parse a JSON file; errors name the file and, for syntax errors, what the parser said. */
export async function readJsonFile(path: string): Promise<unknown> {
    let text: string;
    try {
        text = await readFile(path, "utf8");
    } catch (error) {
        throw new InvalidInputError(`cannot read file: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, path);
    }
    try {
        return JSON.parse(text);
    } catch (error) {
        throw new InvalidInputError(`not valid JSON: ${(error as Error).message}`, path);
    }
}
