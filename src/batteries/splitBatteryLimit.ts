import {InvalidInputError} from "../errors.js";

/** A battery file's name, by extension: an `@` before one is part of the path, not a limit. */
const batteryFile = /\.(?:jsonl(?:\.gz)?|tsv|csv)$/;

/**
 * One entry of a battery spec split into what it names and its `@N` limit (its first N items;
 * Infinity without one). A suffix that is not a whole number ≥ 1 (`mgsm:de@-5`, `advbench@all`)
 * is refused as a bad limit rather than read as part of the name.
 */
export function splitBatteryLimit(entry: string): {body: string; limit: number} {
    const at = entry.lastIndexOf("@");
    if (at < 0) return {body: entry, limit: Infinity};
    const suffix = entry.slice(at + 1);
    if (/^\d+$/.test(suffix) && Number(suffix) >= 1) return {body: entry.slice(0, at), limit: Number(suffix)};
    if (batteryFile.test(entry)) return {body: entry, limit: Infinity};
    throw new InvalidInputError(
        `"${entry}": the @ suffix keeps an entry's first N items and must be a whole number of at least 1, got "@${suffix}"`,
        "battery"
    );
}
