import {MalformedRowError} from "../errors.js";

export interface JsonLine {
    readonly value: unknown;
    /** 1-based line number in the file. */
    readonly line: number;
}

/** Parses JSONL text, skipping blank lines; a line that is not JSON is a MalformedRowError naming file and line. */
export function parseJsonLines(text: string, file: string): JsonLine[] {
    const rows: JsonLine[] = [];
    text.split("\n").forEach((raw, index) => {
        const content = raw.trim();
        if (content === "") return;
        try {
            rows.push({value: JSON.parse(content), line: index + 1});
        } catch (error) {
            throw new MalformedRowError(file, index + 1, `not valid JSON (${(error as Error).message})`);
        }
    });
    return rows;
}
