import {parse} from "csv-parse/sync";
import {MalformedRowError} from "../errors.js";

export interface CsvRow {
    readonly fields: Readonly<Record<string, string>>;
    /** 1-based line on which the record starts. */
    readonly line: number;
}

/**
 * Parses a CSV with a header row into named fields. Missing required columns and records with the
 * wrong field count are MalformedRowErrors naming the file and line.
 */
export function parseCsvRows(text: string, file: string, requiredColumns: readonly string[]): CsvRow[] {
    let records: {record: string[]; info: {lines: number}}[];
    try {
        records = parse(text, {info: true, skip_empty_lines: true, relax_column_count: true}) as unknown as typeof records;
    } catch (error) {
        throw new MalformedRowError(file, (error as {lines?: number}).lines ?? 1, `malformed CSV: ${(error as Error).message}`);
    }
    if (records.length === 0) throw new MalformedRowError(file, 1, "the file is empty; expected a header row");
    const [header, ...data] = records;
    for (const column of requiredColumns)
        if (!header.record.includes(column))
            throw new MalformedRowError(file, 1, `missing column "${column}" (found ${header.record.join(", ")})`);
    return data.map(({record, info}) => {
        // info.lines is the line the record ends on; a record with embedded newlines starts earlier.
        if (record.length !== header.record.length)
            throw new MalformedRowError(file, info.lines, `expected ${header.record.length} fields, found ${record.length}`);
        return {fields: Object.fromEntries(header.record.map((name, index) => [name, record[index]])), line: info.lines};
    });
}
