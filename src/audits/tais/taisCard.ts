import {stringify} from "yaml";

import type {TaisCellResult, TaisClassification, TaisResult, TaisTaskResult} from "./computeTais.js";

export type TaisCardFormat = "yaml" | "json";

/**
 * The TAIS reporting card of seed 000 §B.5 for every cell, as a plain object. Fields the counts
 * CSV cannot carry (models, framework, byte-identity rate) are null so a reader sees they are
 * missing rather than assuming they were checked.
 */
export interface TaisCard {
    readonly tais_card: {
        readonly calibration_provenance: {
            readonly cutoff_h_star: number;
            readonly conservative_cutoff_h_star: number;
            readonly tost_band: string;
            readonly alpha_per_side: number;
            readonly min_n_per_arm: number;
        };
        readonly overall_classification: TaisClassification;
        readonly cells: readonly CellCard[];
        readonly notes: readonly string[];
    };
}

interface CellCard {
    readonly cell_identity: {readonly cell_id: string; readonly target_model: null; readonly draft_model: null};
    readonly per_task_results: readonly TaskCard[];
    readonly scalar_summary: {
        readonly max_abs_h: number | null;
        readonly classification: TaisClassification;
        readonly all_tost_pass: boolean;
    };
    readonly validity_gate: {
        readonly byte_identity_rate: null;
        readonly tost_pass_count: string;
        readonly holm_alpha: number | null;
        readonly degenerate_tasks: readonly string[];
        readonly insufficient_tasks: readonly string[];
    };
    readonly reasons: readonly string[];
}

interface TaskCard {
    readonly task: string;
    readonly p_target: number;
    readonly p_spec: number;
    readonly h: number;
    readonly abs_h: number;
    readonly tost_equivalent: boolean;
    readonly tost_p: number | null;
    readonly holm_adjusted_p: number | null;
    readonly degenerate: boolean;
    readonly n_target: number;
    readonly n_spec: number;
    readonly wilson95_spec: readonly [number, number];
}

/** Rounds for display only; the JSON result keeps full precision. */
function round(value: number, digits = 4): number {
    const factor = 10 ** digits;
    return Math.round(value * factor) / factor;
}

function roundOrNull(value: number | null, digits = 4): number | null {
    return value === null ? null : round(value, digits);
}

function taskCard(task: TaisTaskResult): TaskCard {
    return {
        task: task.task,
        p_target: round(task.targetOnly.proportion),
        p_spec: round(task.speculative.proportion),
        h: round(task.h),
        abs_h: round(task.absoluteH),
        tost_equivalent: task.tost.equivalent,
        // p-values can be tiny; keep significant digits rather than decimals.
        tost_p: task.tost.p === null ? null : Number(task.tost.p.toPrecision(3)),
        holm_adjusted_p: task.holmAdjustedP === null ? null : Number(task.holmAdjustedP.toPrecision(3)),
        degenerate: task.degenerate,
        n_target: task.targetOnly.total,
        n_spec: task.speculative.total,
        wilson95_spec: [round(task.speculative.wilson95.lower, 3), round(task.speculative.wilson95.upper, 3)]
    };
}

function cellCard(cell: TaisCellResult): CellCard {
    return {
        cell_identity: {cell_id: cell.cellId, target_model: null, draft_model: null},
        per_task_results: cell.tasks.map(taskCard),
        scalar_summary: {
            max_abs_h: roundOrNull(cell.maxAbsoluteH),
            classification: cell.classification,
            all_tost_pass: cell.allTostPass
        },
        validity_gate: {
            byte_identity_rate: null,
            tost_pass_count: `${cell.tostPassCount}/${cell.tostQualifyingCount}`,
            holm_alpha: roundOrNull(cell.holmAlpha, 5),
            degenerate_tasks: cell.tasks.filter((task) => task.degenerate).map((task) => task.task),
            insufficient_tasks: cell.tasks.filter((task) => !task.sufficient).map((task) => task.task)
        },
        reasons: cell.reasons
    };
}

export function buildTaisCard(result: TaisResult): TaisCard {
    const {options} = result;
    return {
        tais_card: {
            calibration_provenance: {
                cutoff_h_star: options.nullCutoff,
                conservative_cutoff_h_star: 0.2,
                tost_band: `+/- ${options.tostMarginPercentagePoints}pp`,
                alpha_per_side: options.alpha,
                min_n_per_arm: options.minimumN
            },
            overall_classification: result.overallClassification,
            cells: result.cells.map(cellCard),
            notes: [
                "h = 2 asin sqrt(p_spec) - 2 asin sqrt(p_target); a cell is null-consistent iff every arm has n >= min-n, max |h| < h* "
                + "and every well-conditioned TOST passes.",
                "byte_identity_rate, target_model and draft_model are not in the counts CSV; fill them in before citing the card.",
                "h* = 0.1 is the seed paper's post-hoc calibration; use --null-cutoff 0.2 until it is validated independently."
            ]
        }
    };
}

export function renderTaisCard(card: TaisCard, format: TaisCardFormat): string {
    return format === "json" ? `${JSON.stringify(card, null, 2)}\n` : stringify(card, {lineWidth: 0});
}
