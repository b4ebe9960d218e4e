import {type TaisOptions, DEFAULT_TAIS_OPTIONS} from "../audits/tais/computeTais.js";
import type {TaisCardContext, TaisCardFormat} from "../audits/tais/taisCard.js";
import {InvalidInputError} from "../errors.js";

/** The screen options `tais compute` and `tais run` share, as commander hands them over (raw text). */
export interface TaisScreenCommandOptions {
    readonly nullCutoff?: string;
    readonly tostMargin?: string;
    readonly alpha?: string;
    readonly minN?: string;
    readonly holmScope?: string;
    readonly recalibratedNullCutoff?: string;
    readonly calibrationCorpus?: string;
    readonly calibrationMaxH?: string;
    readonly json?: string;
    readonly format?: string;
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
    if (holmScope !== "cell" && holmScope !== "all") {
        throw new InvalidInputError(`must be cell or all, got "${holmScope}"`, "--holm-scope");
    }
    const recalibratedNullCutoff =
        options.recalibratedNullCutoff === undefined ? null : parseNumber(options.recalibratedNullCutoff, "--recalibrated-null-cutoff", 0);
    if (recalibratedNullCutoff !== null && !(recalibratedNullCutoff > 0)) {
        throw new InvalidInputError(`must be positive, got ${options.recalibratedNullCutoff}`, "--recalibrated-null-cutoff");
    }
    return {nullCutoff, tostMarginPercentagePoints, alpha, minimumN, holmScope, recalibratedNullCutoff};
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
    holmScope: "Holm-Bonferroni family: cell (the tasks of each cell) or all (every gating cell's tasks, seed 000's across-cells family)",
    recalibratedNullCutoff:
        "h* recalibrated for T > 0; without it T > 0 cells are reported but do not set the exit code (seed 000: recalibrate before T > 0)",
    calibrationCorpus: "the corpus h* was calibrated on, for the card (default: seed 000's own when h* = 0.1)",
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

export function parseFormat(format: string | undefined): TaisCardFormat {
    if (format === undefined || format === "yaml" || format === "json") {
        return format ?? "yaml";
    }
    throw new InvalidInputError(`must be yaml or json, got "${format}"`, "--format");
}
