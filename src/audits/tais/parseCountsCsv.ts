import {parse} from "csv-parse/sync";

import {InvalidInputError} from "../../errors.js";
import type {PairedTable} from "../../statistics/pairedTost.js";

/** The two arms of a TAIS contrast, spelled as in the TAIS paper's CSV. */
export const TAIS_ARMS = ["target_only", "speculative"] as const;
export type TaisArm = (typeof TAIS_ARMS)[number];

const REQUIRED_COLUMNS = ["cell_id", "task", "arm", "n_total", "n_safety_pass"] as const;

/** The paired form: one row per task with the paired 2×2 table's counts, no `arm` column. */
export const PAIRED_COLUMNS = ["cell_id", "task", "n_pairs", "n_both_pass", "n_target_only_pass", "n_speculative_only_pass"] as const;
type PairedColumn = (typeof PAIRED_COLUMNS)[number];

/** Counts of one arm of one task, with the CSV line it came from for later messages. */
export interface ArmCountsRow {
    readonly total: number;
    readonly safetyPasses: number;
    readonly line: number;
}

export interface TaskCounts {
    readonly task: string;
    readonly targetOnly: ArmCountsRow;
    readonly speculative: ArmCountsRow;
    /** The paired 2×2 table, when the rows came in the paired form (or from a paired run). */
    readonly paired?: PairedTable;
}

export interface CellCounts {
    readonly cellId: string;
    /** Tasks in order of first appearance in the file. */
    readonly tasks: readonly TaskCounts[];
}

interface ParsedRow {
    readonly cellId: string;
    readonly task: string;
    readonly arm: TaisArm;
    readonly counts: ArmCountsRow;
}

interface CsvRecord {
    readonly record: string[];
    readonly info: {readonly lines: number};
}

/**
 * Parses a TAIS counts CSV into cells of tasks. Two forms, told apart by the header (extra columns
 * are ignored, column order is free):
 * - per arm, the TAIS paper's (§B.6): `cell_id, task, arm, n_total, n_safety_pass`, two rows per task;
 * - paired: `cell_id, task, n_pairs, n_both_pass, n_target_only_pass, n_speculative_only_pass`, one
 *   row per task (no `arm` column), the paired 2×2 table of the same prompts run both ways, so the
 *   screen can use the paired test.
 * Every problem is an InvalidInputError whose field names the CSV line, so a user can fix the file
 * without guessing.
 */
export function parseCountsCsv(text: string): CellCounts[] {
    const records = readRecords(text);
    if (records.length === 0) {
        throw new InvalidInputError(
            `the file is empty; expected a header row ${REQUIRED_COLUMNS.join(",")} or ${PAIRED_COLUMNS.join(",")}`,
            "line 1"
        );
    }
    const [header, ...dataRecords] = records;
    const paired = !header.record.includes("arm") && header.record.includes("n_pairs");
    const columnIndex = indexColumns(header, paired ? PAIRED_COLUMNS : REQUIRED_COLUMNS);
    if (dataRecords.length === 0) {
        throw new InvalidInputError("the file has a header but no data rows", `line ${header.info.lines}`);
    }
    if (paired) {
        return groupPairedRows(dataRecords.map((record) => parsePairedRow(record, columnIndex, header.record.length)));
    }
    const rows = dataRecords.map((record) => parseRow(record, columnIndex, header.record.length));
    return groupIntoCells(rows);
}

function readRecords(text: string): CsvRecord[] {
    try {
        return parse(text, {
            bom: true,
            info: true,
            trim: true,
            skip_empty_lines: true,
            // Field-count mismatches are reported by parseRow with the expected count.
            relax_column_count: true
        }) as unknown as CsvRecord[];
    } catch (error) {
        const line = (error as {lines?: number}).lines;
        throw new InvalidInputError(`malformed CSV: ${(error as Error).message}`, line !== undefined ? `line ${line}` : "csv");
    }
}

function indexColumns(header: CsvRecord, required: readonly string[]): Map<string, number> {
    const columnIndex = new Map<string, number>();
    header.record.forEach((name, index) => {
        if (columnIndex.has(name)) {
            throw new InvalidInputError(`column ${name} appears twice in the header`, `line ${header.info.lines}`);
        }
        columnIndex.set(name, index);
    });
    const missing = required.filter((name) => !columnIndex.has(name));
    if (missing.length > 0) {
        throw new InvalidInputError(
            `missing column${missing.length > 1 ? "s" : ""} ${missing.join(", ")} in the header (found: ${header.record.join(", ")})`,
            `line ${header.info.lines}`
        );
    }
    return columnIndex;
}

function parseRow(record: CsvRecord, columnIndex: Map<string, number>, headerWidth: number): ParsedRow {
    const line = record.info.lines;
    if (record.record.length !== headerWidth) {
        throw new InvalidInputError(`expected ${headerWidth} fields like the header, found ${record.record.length}`, `line ${line}`);
    }
    const field = (name: (typeof REQUIRED_COLUMNS)[number]): string => {
        const value = record.record[columnIndex.get(name) as number];
        if (value === "") {
            throw new InvalidInputError(`column ${name} is empty`, `line ${line}`);
        }
        return value;
    };
    const arm = field("arm");
    if (!(TAIS_ARMS as readonly string[]).includes(arm)) {
        throw new InvalidInputError(`unknown arm "${arm}"; expected one of ${TAIS_ARMS.join(", ")}`, `line ${line}`);
    }
    const total = parseCount(field("n_total"), "n_total", line);
    const safetyPasses = parseCount(field("n_safety_pass"), "n_safety_pass", line);
    if (total < 1) {
        throw new InvalidInputError("n_total must be at least 1; drop the row instead of reporting an empty arm", `line ${line}`);
    }
    if (safetyPasses > total) {
        throw new InvalidInputError(`n_safety_pass (${safetyPasses}) exceeds n_total (${total})`, `line ${line}`);
    }
    return {cellId: field("cell_id"), task: field("task"), arm: arm as TaisArm, counts: {total, safetyPasses, line}};
}

function parseCount(text: string, column: string, line: number): number {
    if (/^-\d+$/.test(text)) {
        throw new InvalidInputError(`${column} must not be negative, got ${text}`, `line ${line}`);
    }
    // Digits only: "3.0", "1e3" or "12abc" are rejected rather than silently coerced.
    if (!/^\d+$/.test(text)) {
        throw new InvalidInputError(`${column} must be a non-negative integer, got "${text}"`, `line ${line}`);
    }
    const value = Number(text);
    if (!Number.isSafeInteger(value)) {
        throw new InvalidInputError(`${column} is too large, got ${text}`, `line ${line}`);
    }
    return value;
}

function groupIntoCells(rows: readonly ParsedRow[]): CellCounts[] {
    // cell → task → arm; Maps keep first-appearance order for a stable report.
    const cells = new Map<string, Map<string, Partial<Record<TaisArm, ArmCountsRow>>>>();
    for (const row of rows) {
        const tasks = cells.get(row.cellId) ?? new Map<string, Partial<Record<TaisArm, ArmCountsRow>>>();
        cells.set(row.cellId, tasks);
        const arms = tasks.get(row.task) ?? {};
        tasks.set(row.task, arms);
        const previous = arms[row.arm];
        if (previous !== undefined) {
            throw new InvalidInputError(
                `duplicate row for cell "${row.cellId}", task "${row.task}", arm ${row.arm} (first given on line ${previous.line})`,
                `line ${row.counts.line}`
            );
        }
        arms[row.arm] = row.counts;
    }
    return [...cells].map(([cellId, tasks]) => ({
        cellId,
        tasks: [...tasks].map(([task, arms]) => pairArms(cellId, task, arms))
    }));
}

function pairArms(cellId: string, task: string, arms: Partial<Record<TaisArm, ArmCountsRow>>): TaskCounts {
    const {target_only: targetOnly, speculative} = arms;
    if (targetOnly === undefined || speculative === undefined) {
        const present = (targetOnly ?? speculative) as ArmCountsRow;
        const missingArm: TaisArm = targetOnly === undefined ? "target_only" : "speculative";
        throw new InvalidInputError(
            `cell "${cellId}", task "${task}" has no ${missingArm} row; every task needs both arms`,
            `line ${present.line}`
        );
    }
    return {task, targetOnly, speculative};
}

interface PairedRow {
    readonly cellId: string;
    readonly task: string;
    readonly line: number;
    readonly table: PairedTable;
}

function parsePairedRow(record: CsvRecord, columnIndex: Map<string, number>, headerWidth: number): PairedRow {
    const line = record.info.lines;
    if (record.record.length !== headerWidth) {
        throw new InvalidInputError(`expected ${headerWidth} fields like the header, found ${record.record.length}`, `line ${line}`);
    }
    const field = (name: PairedColumn): string => {
        const value = record.record[columnIndex.get(name) as number];
        if (value === "") {
            throw new InvalidInputError(`column ${name} is empty`, `line ${line}`);
        }
        return value;
    };
    const share = (name: PairedColumn) => parseShare(field(name), name, line);
    const pairs = parseCount(field("n_pairs"), "n_pairs", line);
    const bothPass = share("n_both_pass");
    const targetOnlyPass = share("n_target_only_pass");
    const speculativeOnlyPass = share("n_speculative_only_pass");
    if (pairs < 1) {
        throw new InvalidInputError("n_pairs must be at least 1; drop the row instead of reporting an empty task", `line ${line}`);
    }
    const passing = bothPass + targetOnlyPass + speculativeOnlyPass;
    if (passing > pairs * (1 + 1e-9)) {
        throw new InvalidInputError(
            `n_both_pass + n_target_only_pass + n_speculative_only_pass (${passing}) exceeds n_pairs (${pairs})`,
            `line ${line}`
        );
    }
    return {
        cellId: field("cell_id"),
        task: field("task"),
        line,
        table: {bothPass, targetOnlyPass, speculativeOnlyPass, bothFail: Math.max(0, pairs - passing)}
    };
}

/**
 * A paired cell: a whole count, or with several seeds per prompt a sum of per-prompt shares (as
 * `tais run --counts` writes it), so a plain decimal is accepted here.
 */
function parseShare(text: string, column: string, line: number): number {
    if (/^\d+$/.test(text)) return parseCount(text, column, line);
    if (!/^\d+\.\d+$/.test(text)) {
        throw new InvalidInputError(`${column} must be a non-negative number, got "${text}"`, `line ${line}`);
    }
    return Number(text);
}

/** One task per paired row, the arms' counts implied by the table; cells and tasks in order of first appearance. */
function groupPairedRows(rows: readonly PairedRow[]): CellCounts[] {
    const cells = new Map<string, Map<string, TaskCounts>>();
    for (const row of rows) {
        const tasks = cells.get(row.cellId) ?? new Map<string, TaskCounts>();
        cells.set(row.cellId, tasks);
        const previous = tasks.get(row.task);
        if (previous !== undefined) {
            throw new InvalidInputError(
                `duplicate row for cell "${row.cellId}", task "${row.task}" (first given on line ${previous.targetOnly.line})`,
                `line ${row.line}`
            );
        }
        const {table} = row;
        const pairs = table.bothPass + table.targetOnlyPass + table.speculativeOnlyPass + table.bothFail;
        tasks.set(row.task, {
            task: row.task,
            targetOnly: {total: pairs, safetyPasses: table.bothPass + table.targetOnlyPass, line: row.line},
            speculative: {total: pairs, safetyPasses: table.bothPass + table.speculativeOnlyPass, line: row.line},
            paired: table
        });
    }
    return [...cells].map(([cellId, tasks]) => ({cellId, tasks: [...tasks.values()]}));
}
