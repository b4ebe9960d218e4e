import {mcnemarExact} from "../../statistics/mcnemarExact.js";
import {type PairedTable, pairedTost} from "../../statistics/pairedTost.js";
import type {TostResult} from "../../statistics/tostFromStandardError.js";
import type {CellCounts} from "./parseCountsCsv.js";
import type {TaisSampleRow} from "./TaisSampleRow.js";

/** Seed 000's "strong" byte-identity flag threshold. */
export const STRONG_BYTE_IDENTITY = 0.995;

export interface PairedTaskAnalysis {
    readonly task: string;
    readonly pairs: number;
    readonly table: PairedTable;
    /** Exact McNemar p on the discordant pairs (1 when there are none). */
    readonly mcnemarP: number;
    /** Paired-proportion TOST at ±margin on the same pairs. */
    readonly pairedTost: TostResult;
}

export interface PairedCellAnalysis {
    readonly cellId: string;
    readonly temperature: number;
    readonly seeds: readonly number[];
    readonly pairs: number;
    readonly byteIdentical: number;
    readonly byteIdentityRate: number;
    readonly byteIdentityFlag: "strong" | "moderate";
    /** Scored tasks only; tasks without a scorer count towards byte identity alone. */
    readonly tasks: readonly PairedTaskAnalysis[];
}

export interface TaisSampleSummary {
    readonly cells: readonly PairedCellAnalysis[];
    /** The same outcomes as unpaired counts, the input of computeTais and of the counts CSV. */
    readonly counts: readonly CellCounts[];
}

/** The TAIS cell of a temperature: T = 0 is one cell; each T > 0 pools its seeds into another, reported separately. */
export function taisCellId(temperature: number): string {
    return `T=${temperature}`;
}

/**
 * Paired analysis of ledger rows: per temperature cell, byte identity with the strong/moderate
 * flag, and per scored task the paired 2×2 table, McNemar exact and paired TOST; plus per-arm
 * counts for the unpaired TAIS screen.
 */
export function summarizeTaisSamples(rows: readonly TaisSampleRow[], marginProportion: number, alpha: number): TaisSampleSummary {
    const temperatures = [...new Set(rows.map((row) => row.temperature))].sort((left, right) => left - right);
    const cells: PairedCellAnalysis[] = [];
    const counts: CellCounts[] = [];
    for (const temperature of temperatures) {
        const cellRows = rows.filter((row) => row.temperature === temperature);
        const cellId = taisCellId(temperature);
        const byteIdentical = cellRows.filter((row) => row.identical).length;
        const tasks = [...new Set(cellRows.filter((row) => row.targetOnly.pass !== null).map((row) => row.task))];
        const taskAnalyses = tasks.map((task) => {
            const taskRows = cellRows.filter((row) => row.task === task && row.targetOnly.pass !== null && row.speculative.pass !== null);
            const table: PairedTable = {
                bothPass: taskRows.filter((row) => row.targetOnly.pass && row.speculative.pass).length,
                targetOnlyPass: taskRows.filter((row) => row.targetOnly.pass && !row.speculative.pass).length,
                speculativeOnlyPass: taskRows.filter((row) => !row.targetOnly.pass && row.speculative.pass).length,
                bothFail: taskRows.filter((row) => !row.targetOnly.pass && !row.speculative.pass).length
            };
            return {
                task,
                pairs: taskRows.length,
                table,
                mcnemarP: mcnemarExact(table.targetOnlyPass, table.speculativeOnlyPass),
                pairedTost: pairedTost(table, marginProportion, alpha)
            };
        });
        cells.push({
            cellId,
            temperature,
            seeds: [...new Set(cellRows.map((row) => row.seed))].sort((left, right) => left - right),
            pairs: cellRows.length,
            byteIdentical,
            byteIdentityRate: byteIdentical / cellRows.length,
            byteIdentityFlag: byteIdentical / cellRows.length >= STRONG_BYTE_IDENTITY ? "strong" : "moderate",
            tasks: taskAnalyses
        });
        if (taskAnalyses.length > 0) {
            counts.push({
                cellId,
                tasks: taskAnalyses.map(({task, pairs, table}) => ({
                    task,
                    targetOnly: {total: pairs, safetyPasses: table.bothPass + table.targetOnlyPass, line: 0},
                    speculative: {total: pairs, safetyPasses: table.bothPass + table.speculativeOnlyPass, line: 0}
                }))
            });
        }
    }
    return {cells, counts};
}

/** The counts CSV `tais compute` reads: cell_id, task, arm, n_total, n_safety_pass. */
export function formatCountsCsv(counts: readonly CellCounts[]): string {
    const quote = (text: string) => (/[",\n]/.test(text) ? `"${text.replace(/"/g, "\"\"")}"` : text);
    const lines = ["cell_id,task,arm,n_total,n_safety_pass"];
    for (const cell of counts) {
        for (const task of cell.tasks) {
            lines.push(`${quote(cell.cellId)},${quote(task.task)},target_only,${task.targetOnly.total},${task.targetOnly.safetyPasses}`);
            lines.push(`${quote(cell.cellId)},${quote(task.task)},speculative,${task.speculative.total},${task.speculative.safetyPasses}`);
        }
    }
    return `${lines.join("\n")}\n`;
}
