import {type TaisOptions, DEFAULT_TAIS_OPTIONS} from "../audits/tais/computeTais.js";
import type {TaisCardFormat} from "../audits/tais/taisCard.js";
import {InvalidInputError} from "../errors.js";

/** The screen options `tais compute` and `tais run` share, as commander hands them over (raw text). */
export interface TaisScreenCommandOptions {
    readonly nullCutoff?: string;
    readonly tostMargin?: string;
    readonly alpha?: string;
    readonly minN?: string;
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
    return {nullCutoff, tostMarginPercentagePoints, alpha, minimumN};
}

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
