import type {PairedTable} from "../../statistics/pairedTost.js";
import type {TaisCellInput} from "./computeTais.js";
import {promptLevelTable} from "../../statistics/promptLevelTable.js";
import {type CellCounts, PAIRED_COLUMNS} from "./parseCountsCsv.js";
import type {TaisSampleRow} from "./TaisSampleRow.js";

/** A temperature cell of a `tais run` ledger: the screen's input and what it pooled. */
export interface TaisSampleCell {
    readonly input: TaisCellInput;
    readonly seeds: readonly number[];
    /** Samples in the cell, scored or not: each prompt under each of its seeds. */
    readonly pairs: number;
}

/** The TAIS cell of a temperature: T = 0 is one cell; each T > 0 pools its seeds into another, reported separately. */
export function taisCellId(temperature: number): string {
    return `T=${temperature}`;
}

/** The temperature a cell id written by taisCellId names ("T=0.7" → 0.7); null for any other id. */
export function temperatureOfCellId(cellId: string): number | null {
    const match = /^T=(\d+(?:\.\d+)?)$/.exec(cellId);
    return match === null ? null : Number(match[1]);
}

/**
 * Groups ledger rows into one cell per temperature: byte identity over every pair, and per scored
 * task the paired 2×2 table of outcomes at the prompt level (promptLevelTable; with the arms'
 * counts it implies), the input of computeTais. Cells without a scored task carry byte identity
 * only and no tasks.
 */
export function summarizeTaisSamples(rows: readonly TaisSampleRow[]): TaisSampleCell[] {
    const temperatures = [...new Set(rows.map((row) => row.temperature))].sort((left, right) => left - right);
    return temperatures.map((temperature) => {
        const cellRows = rows.filter((row) => row.temperature === temperature);
        const scored = cellRows.filter((row) => row.targetOnly.pass !== null && row.speculative.pass !== null);
        const tasks = [...new Set(scored.map((row) => row.task))].map((task) => {
            const paired = promptLevelTable(
                scored
                    .filter((row) => row.task === task)
                    .map((row) => ({
                        prompt: row.itemId,
                        targetOnly: row.targetOnly.pass === true,
                        speculative: row.speculative.pass === true
                    }))
            );
            const prompts = Math.round(paired.bothPass + paired.targetOnlyPass + paired.speculativeOnlyPass + paired.bothFail);
            return {
                task,
                targetOnly: {total: prompts, safetyPasses: paired.bothPass + paired.targetOnlyPass, line: 0},
                speculative: {total: prompts, safetyPasses: paired.bothPass + paired.speculativeOnlyPass, line: 0},
                paired
            };
        });
        return {
            input: {
                cellId: taisCellId(temperature),
                temperature,
                tasks,
                byteIdentity: {identical: cellRows.filter((row) => row.identical).length, pairs: cellRows.length}
            },
            seeds: [...new Set(cellRows.map((row) => row.seed))].sort((left, right) => left - right),
            pairs: cellRows.length
        };
    });
}

/**
 * The counts CSV `tais compute` reads. Cells whose every task carries its paired table are written in
 * the paired form (cell_id, task, n_pairs, n_both_pass, n_target_only_pass, n_speculative_only_pass),
 * so the pairing survives and `tais compute` reaches the verdict `tais run` did; otherwise per arm
 * (cell_id, task, arm, n_total, n_safety_pass).
 */
export function formatCountsCsv(counts: readonly CellCounts[]): string {
    const quote = (text: string) => (/[",\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);
    const paired = counts.every((cell) => cell.tasks.every((task) => task.paired !== undefined));
    const lines = [paired ? PAIRED_COLUMNS.join(",") : "cell_id,task,arm,n_total,n_safety_pass"];
    for (const cell of counts) {
        for (const task of cell.tasks) {
            const prefix = `${quote(cell.cellId)},${quote(task.task)}`;
            if (paired) {
                const table = task.paired as PairedTable;
                lines.push(`${prefix},${task.targetOnly.total},${table.bothPass},${table.targetOnlyPass},${table.speculativeOnlyPass}`);
                continue;
            }
            lines.push(`${prefix},target_only,${task.targetOnly.total},${task.targetOnly.safetyPasses}`);
            lines.push(`${prefix},speculative,${task.speculative.total},${task.speculative.safetyPasses}`);
        }
    }
    return `${lines.join("\n")}\n`;
}
