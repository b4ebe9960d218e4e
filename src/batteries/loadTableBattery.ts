import {basename} from "node:path";
import {parse} from "csv-parse/sync";
import {MalformedRowError} from "../errors.js";
import type {BatteryItem} from "./BatteryItem.js";
import {parseBatteryRows} from "./loadJsonlBattery.js";
import type {JsonLine} from "./parseJsonLines.js";
import {mgsmLanguageOf, parseMgsm} from "./loadMgsm.js";
import {readDataFile} from "./readDataFile.js";

/** The columns a table battery may have: the scalar fields of the JSONL format (docs/audits.md). */
export const tableBatteryColumns = ["id", "task", "language", "prompt", "reference", "scorer"] as const;

/**
 * A battery in a table: a `.csv` (RFC 4180, quotes allowed) or `.tsv` (tab-separated, no quoting)
 * file whose header row names columns among tableBatteryColumns; `prompt` is required. An empty cell
 * is an absent field; `task` defaults to the file's name and `id` to `<task>-<row>`. A `.tsv` file
 * without that header and with two columns is read as MGSM's `question<TAB>answer` rows, scored
 * "numeric"; named `mgsm_<tag>.tsv`, it gives exactly loadMgsm's items for that language (ids, task,
 * language). Each row is then checked as a JSONL item is (same errors, naming the line and the field).
 */
export async function loadTableBattery(path: string): Promise<BatteryItem[]> {
    return parseTableBattery(await readDataFile(path), path);
}

export function parseTableBattery(text: string, file: string): BatteryItem[] {
    const records = file.endsWith(".tsv") ? tabRecords(text) : csvRecords(text, file);
    if (records.length === 0) throw new MalformedRowError(file, 1, "the file is empty; expected a header row naming the columns");
    const stem = basename(file).replace(/\.(tsv|csv)$/, "");
    const [header, ...data] = records;
    const named = header.fields.includes("prompt");
    if (!named && file.endsWith(".tsv") && header.fields.length === 2) {
        // MGSM's own file, loaded directly, gives the items `mgsm:<tag>` gives (ids, task, language).
        const language = mgsmLanguageOf(basename(file));
        if (language !== undefined) return parseMgsm(text, file, language);
        return parseBatteryRows(
            records.map(({fields, line}, index) => ({
                value: {id: `${stem}-${index + 1}`, task: stem, prompt: fields[0], reference: fields[1], scorer: "numeric"},
                line
            })),
            file
        );
    }
    if (!named)
        throw new MalformedRowError(
            file,
            header.line,
            `the header row must name a "prompt" column (columns: ${tableBatteryColumns.join(", ")}); found ${header.fields.join(", ")}`
        );
    for (const column of header.fields)
        if (!(tableBatteryColumns as readonly string[]).includes(column))
            throw new MalformedRowError(file, header.line, `unknown column "${column}"; expected ${tableBatteryColumns.join(", ")}`);
    const rows: JsonLine[] = data.map(({fields, line}, index) => {
        if (fields.length !== header.fields.length)
            throw new MalformedRowError(file, line, `expected ${header.fields.length} fields, found ${fields.length}`);
        const value: Record<string, string> = {};
        header.fields.forEach((column, column_index) => {
            if (fields[column_index] !== "") value[column] = fields[column_index];
        });
        value.task ??= stem;
        value.id ??= `${value.task}-${index + 1}`;
        return {value, line};
    });
    return parseBatteryRows(rows, file);
}

interface TableRecord {
    readonly fields: readonly string[];
    readonly line: number;
}

function tabRecords(text: string): TableRecord[] {
    const records: TableRecord[] = [];
    text.split("\n").forEach((raw, index) => {
        const line = raw.replace(/\r$/, "");
        if (line.trim() !== "") records.push({fields: line.split("\t"), line: index + 1});
    });
    return records;
}

function csvRecords(text: string, file: string): TableRecord[] {
    try {
        const parsed = parse(text, {info: true, skip_empty_lines: true, relax_column_count: true}) as unknown as {
            record: string[];
            info: {lines: number};
        }[];
        return parsed.map(({record, info}) => ({fields: record, line: info.lines}));
    } catch (error) {
        throw new MalformedRowError(file, (error as {lines?: number}).lines ?? 1, `malformed CSV: ${(error as Error).message}`);
    }
}
