import {InvalidInputError} from "../errors.js";

/** Draft length settings given as one value: a fixed γ, or `auto` with its largest draft. */
export interface GammaSetting {
    readonly gamma: number;
    /** Present for `auto` / `auto:MAX`. */
    readonly draftLength?: "auto";
    readonly maxGamma?: number;
}

/** Largest draft of `auto` without `:MAX` (2 × the default γ of 4). */
export const defaultAutoMaxGamma = 8;

/**
 * Parses `--gamma` (and a request's `speculative.gamma`): an integer in [0, 64] (γ draft tokens every
 * step; 0 is target-only), `auto` (each step's length chosen in 0..8 from measured costs and
 * acceptance, GenerationOptions.draftLength "auto") or `auto:MAX` (chosen in 0..MAX, MAX in [1, 64]).
 * With auto, γ is the length of the first steps: 4, or MAX when smaller.
 */
export function parseGammaSpec(value: string | number, field: string): GammaSetting {
    const text = String(value).trim();
    const auto = /^auto(?::(.*))?$/.exec(text);
    if (auto === null) {
        const gamma = Number(text);
        if (text === "" || !Number.isInteger(gamma) || gamma < 0 || gamma > 64)
            throw new InvalidInputError(`must be an integer in [0, 64], "auto" or "auto:MAX", got "${text}"`, field);
        return {gamma};
    }
    const maxGamma = auto[1] === undefined ? defaultAutoMaxGamma : Number(auto[1]);
    if (auto[1] !== undefined && (auto[1] === "" || !Number.isInteger(maxGamma) || maxGamma < 1 || maxGamma > 64))
        throw new InvalidInputError(`auto:MAX needs MAX, the largest draft, as an integer in [1, 64], got "${text}"`, field);
    return {gamma: Math.min(4, maxGamma), draftLength: "auto", maxGamma};
}

/** "γ=4", "γ=auto" or "γ=auto:16" (the default largest draft is left out). */
export function gammaLabel(setting: GammaSetting): string {
    if (setting.draftLength !== "auto") return `γ=${setting.gamma}`;
    return setting.maxGamma === undefined || setting.maxGamma === defaultAutoMaxGamma ? "γ=auto" : `γ=auto:${setting.maxGamma}`;
}
