import {type Command, Option} from "commander";
import {
    type HolmScope,
    type InsufficientDataRule,
    type TaisOptions,
    type VerdictRule,
    DEFAULT_TAIS_OPTIONS,
    INSUFFICIENT_DATA_RULES,
    VERDICT_RULES
} from "../audits/tais/computeTais.js";
import {holmPairsTable} from "../statistics/pairedScoreEquivalence.js";
import type {TaisCardContext, TaisCardFormat} from "../audits/tais/taisCard.js";
import {InvalidInputError} from "../errors.js";

/** The screen options `tais compute` and `tais run` share, as commander hands them over (raw text; the choices checked by commander). */
export interface TaisScreenCommandOptions {
    readonly nullCutoff?: string;
    readonly tostMargin?: string;
    readonly alpha?: string;
    readonly minN?: string;
    readonly holmScope?: HolmScope;
    readonly insufficientData?: InsufficientDataRule;
    readonly verdicts?: VerdictRule;
    readonly recalibratedNullCutoff?: string;
    readonly calibrationCorpus?: string;
    readonly calibrationMaxH?: string;
    readonly json?: string;
    readonly format?: TaisCardFormat;
}

export function parseTaisOptions(options: TaisScreenCommandOptions): TaisOptions {
    const nullCutoff = parseNumber(options.nullCutoff, "--null-cutoff", DEFAULT_TAIS_OPTIONS.nullCutoff);
    const tostMarginPercentagePoints = parseNumber(options.tostMargin, "--tost-margin", DEFAULT_TAIS_OPTIONS.tostMarginPercentagePoints);
    const alpha = parseNumber(options.alpha, "--alpha", DEFAULT_TAIS_OPTIONS.alpha);
    const minimumN = parseNumber(options.minN, "--min-n", DEFAULT_TAIS_OPTIONS.minimumN);
    if (!(nullCutoff > 0)) {
        throw new InvalidInputError(`must be positive, got ${options.nullCutoff}`, "--null-cutoff");
    }
    if (!(tostMarginPercentagePoints > 0 && tostMarginPercentagePoints < 100)) {
        throw new InvalidInputError(`must lie strictly between 0 and 100 percentage points, got ${options.tostMargin}`, "--tost-margin");
    }
    if (!(alpha > 0 && alpha < 0.5)) {
        throw new InvalidInputError(`must lie strictly between 0 and 0.5, got ${options.alpha}`, "--alpha");
    }
    if (!(Number.isInteger(minimumN) && minimumN >= 1)) {
        throw new InvalidInputError(`must be a positive integer, got ${options.minN}`, "--min-n");
    }
    const holmScope = options.holmScope ?? DEFAULT_TAIS_OPTIONS.holmScope;
    const recalibratedNullCutoff =
        options.recalibratedNullCutoff === undefined ? null : parseNumber(options.recalibratedNullCutoff, "--recalibrated-null-cutoff", 0);
    if (recalibratedNullCutoff !== null && !(recalibratedNullCutoff > 0)) {
        throw new InvalidInputError(`must be positive, got ${options.recalibratedNullCutoff}`, "--recalibrated-null-cutoff");
    }
    const insufficientDataRule = options.insufficientData ?? DEFAULT_TAIS_OPTIONS.insufficientDataRule;
    const verdicts = options.verdicts ?? DEFAULT_TAIS_OPTIONS.verdicts;
    return {nullCutoff, tostMarginPercentagePoints, alpha, minimumN, holmScope, insufficientDataRule, verdicts, recalibratedNullCutoff};
}

/** The card's calibration provenance from --calibration-corpus and --calibration-max-h; none when neither is given. */
export function cardCalibration(options: TaisScreenCommandOptions): Pick<TaisCardContext, "calibration"> {
    if (options.calibrationCorpus === undefined && options.calibrationMaxH === undefined) {
        return {};
    }
    if (options.calibrationCorpus === undefined || options.calibrationCorpus.trim() === "") {
        throw new InvalidInputError("must name the corpus h* was calibrated on when --calibration-max-h is given", "--calibration-corpus");
    }
    const maxH = options.calibrationMaxH === undefined ? null : parseNumber(options.calibrationMaxH, "--calibration-max-h", 0);
    return {calibration: {corpus: options.calibrationCorpus, maxH}};
}

/** Help text of the options both TAIS commands share beyond the screen's numbers. */
export const TAIS_FAMILY_HELP = {
    holmScope:
        "Holm-Bonferroni family: cell (the tasks of each cell) or all (every gating cell's tasks together; the TAIS paper's family is its 11 matched AdvBench contrasts, which 'all' reproduces on a file of just those)",
    verdicts:
        "three-way: every task with --min-n is tested; equivalent (equivalence test passes after Holm, |h| < h*), divergent (the two-sided test of d = 0 rejects at 2 alpha after Holm: the 1 - 2 alpha interval excludes 0) or inconclusive (neither; the pairs needed are reported); " +
        "paper: the TAIS paper's null-consistent / divergent (any failed test is divergent; degenerate Wald contrasts flagged)",
    insufficientData:
        "with --verdicts paper: insufficient data only when no task has --min-n on both arms (TAIS paper B.6); require-equivalence: also when no task was shown equivalent (all degenerate), max |h| then null",
    recalibratedNullCutoff:
        "h* recalibrated for T > 0; without it T > 0 cells are reported but do not set the exit code (the TAIS paper: recalibrate before T > 0)",
    calibrationCorpus: "the corpus h* was calibrated on, for the card (default: the TAIS paper's own when h* = 0.1)",
    calibrationMaxH: "the largest |h| on that calibration corpus, for the card"
} as const;

function parseNumber(text: string | undefined, flag: string, fallback: number): number {
    if (text === undefined) {
        return fallback;
    }
    // A plain decimal: Number() alone would accept "", "0x10" and " 3 ".
    if (!/^\+?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) {
        throw new InvalidInputError(`must be a non-negative decimal number, got "${text}"`, flag);
    }
    return Number(text);
}

/** --holm-scope, --verdicts and --insufficient-data: the rules both TAIS commands take, checked by commander's choices(). */
export function addTaisRuleOptions(command: Command): Command {
    return command
        .addOption(
            new Option("--holm-scope <scope>", TAIS_FAMILY_HELP.holmScope)
                .choices(["cell", "all"] satisfies HolmScope[])
                .default(DEFAULT_TAIS_OPTIONS.holmScope)
        )
        .addOption(new Option("--verdicts <rule>", TAIS_FAMILY_HELP.verdicts).choices(VERDICT_RULES).default(DEFAULT_TAIS_OPTIONS.verdicts))
        .addOption(
            new Option("--insufficient-data <rule>", TAIS_FAMILY_HELP.insufficientData)
                .choices(INSUFFICIENT_DATA_RULES)
                .default(DEFAULT_TAIS_OPTIONS.insufficientDataRule)
        );
}

/** --format yaml|json of the card. */
export function formatOption(): Option {
    return new Option("--format <format>", "card format").choices(["yaml", "json"] satisfies TaisCardFormat[]).default("yaml");
}

/** Task counts shown in the help's table of pairs needed under Holm. */
const HOLM_TABLE_TASKS = [1, 2, 3, 4, 6, 8, 11];

/**
 * The help paragraph on how many pairs identical arms need per task, for the defaults (±3pp,
 * α = 0.05), computed by the paired test itself (holmPairsTable). A function, so the search runs
 * only when help is printed.
 */
export function holmPairsHelp(): string {
    const margin = DEFAULT_TAIS_OPTIONS.tostMarginPercentagePoints;
    const rows = holmPairsTable(margin / 100, DEFAULT_TAIS_OPTIONS.alpha, HOLM_TABLE_TASKS);
    return (
        `\nPairs per task for a task with no discordant pair to pass (±${margin}pp, alpha ${DEFAULT_TAIS_OPTIONS.alpha}, ` +
        "every task of the Holm family alike; with fewer, identical arms are inconclusive, exit 3):\n" +
        `  tasks in the family  ${rows.map((row) => String(row.tasks).padStart(4)).join("")}\n` +
        `  pairs per task       ${rows.map((row) => String(row.pairsPerTask).padStart(4)).join("")}\n`
    );
}
