import {readdir} from "node:fs/promises";
import {join} from "node:path";
import {MalformedRowError} from "../errors.js";
import type {BatteryItem} from "./BatteryItem.js";
import {defaultDataDirectory} from "./defaultDataDirectory.js";
import {readDataFile} from "./readDataFile.js";
import {normalizeNumberText} from "./scorers/extractFinalNumber.js";

/** Languages shipped in the shared MGSM folder; every file holds the same 250 problems in the same order. */
export const mgsmLanguages = ["en", "es", "de", "fr", "ru", "zh", "ja"] as const;

/**
 * The languages an MGSM folder holds: every `mgsm_<tag>.tsv` in it (any tag, e.g. MGSM's bn, sw,
 * te, th), in mgsmLanguages' order first and then alphabetically. A missing folder holds none.
 */
export async function mgsmLanguagesIn(directory: string): Promise<string[]> {
    let names: string[];
    try {
        names = await readdir(directory);
    } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
        throw error;
    }
    const found = names.flatMap((name) => mgsmLanguageOf(name) ?? []);
    const shipped: readonly string[] = mgsmLanguages;
    return [...shipped.filter((tag) => found.includes(tag)), ...found.filter((tag) => !shipped.includes(tag)).sort()];
}

/**
 * One MGSM language (TSV `question<TAB>answer`, no header). Ids are `mgsm-<n>-<language>` with n the
 * row number, so row n is the same problem in every language; the task is `mgsm-<language>` so a
 * screen reports each language separately.
 */
export async function loadMgsm(language: string, directory = join(defaultDataDirectory(), "mgsm")): Promise<BatteryItem[]> {
    const path = join(directory, `mgsm_${language}.tsv`);
    return parseMgsm(await readDataFile(path), path, language);
}

/** The language tag of an MGSM file name (`mgsm_<tag>.tsv`), undefined for any other name. */
export function mgsmLanguageOf(fileName: string): string | undefined {
    return /^mgsm_(.+)\.tsv$/.exec(fileName)?.[1];
}

/** The rows of one MGSM language's file (`path` names it in errors), as loadMgsm returns them. */
export function parseMgsm(text: string, path: string, language: string): BatteryItem[] {
    const items: BatteryItem[] = [];
    text.split("\n").forEach((raw, index) => {
        const line = raw.replace(/\r$/, "");
        if (line.trim() === "") return;
        const fields = line.split("\t");
        if (fields.length !== 2)
            throw new MalformedRowError(path, index + 1, `expected question<TAB>answer, found ${fields.length} fields`);
        const reference = normalizeNumberText(fields[1]);
        if (reference == null) throw new MalformedRowError(path, index + 1, `answer "${fields[1]}" is not a number`);
        items.push({
            id: `mgsm-${items.length + 1}-${language}`,
            task: `mgsm-${language}`,
            language,
            prompt: fields[0],
            reference,
            scorer: "numeric"
        });
    });
    return items;
}
