import {join} from "node:path";
import {InvalidInputError, UnknownLanguageError} from "../errors.js";
import type {BatteryItem} from "./BatteryItem.js";
import {defaultDataDirectory} from "./defaultDataDirectory.js";
import {loadAdvBench} from "./loadAdvBench.js";
import {bbqCategories, loadBbq} from "./loadBbq.js";
import {loadCsqa} from "./loadCsqa.js";
import {loadGsm8k} from "./loadGsm8k.js";
import {loadHumanEval} from "./loadHumanEval.js";
import {loadJsonlBattery} from "./loadJsonlBattery.js";
import {loadMgsm, mgsmLanguages, mgsmLanguagesIn} from "./loadMgsm.js";
import {loadTableBattery} from "./loadTableBattery.js";
import {loadTruthfulQa} from "./loadTruthfulQa.js";
import {splitBatteryLimit} from "./splitBatteryLimit.js";

export const batteryNames = ["advbench", "truthfulqa", "bbq", "csqa", "gsm8k", "mgsm", "humaneval"] as const;

/**
 * Loads a battery spec: comma-separated entries `name[:variant][@limit]` or paths to battery files
 * (`*.jsonl`, `*.jsonl.gz`: loadJsonlBattery; `*.tsv`, `*.csv`: loadTableBattery), concatenated in order.
 *   advbench · truthfulqa · csqa · gsm8k · humaneval
 *   bbq (all three categories) or bbq:Religion · mgsm (every mgsm_<tag>.tsv in its folder) or mgsm:de
 *   @N keeps the first N items of that entry (per variant), e.g. `advbench@100,bbq:Religion@50`.
 * Named datasets are read from `dataDirectory` (default: defaultDataDirectory()); nothing is downloaded.
 */
export async function loadBattery(spec: string, dataDirectory = defaultDataDirectory()): Promise<BatteryItem[]> {
    const entries = spec
        .split(",")
        .map((entry) => entry.trim())
        .filter((entry) => entry !== "");
    if (entries.length === 0) throw new InvalidInputError("is empty", "battery");
    const items: BatteryItem[] = [];
    for (const entry of entries) {
        const {body, limit} = splitBatteryLimit(entry);
        const groups = /\.jsonl(?:\.gz)?$/.test(body)
            ? [await loadJsonlBattery(body)]
            : /\.(?:tsv|csv)$/.test(body)
              ? [await loadTableBattery(body)]
              : await loadNamed(body, dataDirectory);
        for (const group of groups) items.push(...group.slice(0, limit));
    }
    const seen = new Set<string>();
    for (const item of items) {
        if (seen.has(item.id)) throw new InvalidInputError(`item id "${item.id}" appears twice; list each dataset once`, "battery");
        seen.add(item.id);
    }
    return items;
}

async function loadNamed(body: string, directory: string): Promise<BatteryItem[][]> {
    const [name, variant] = body.split(":", 2) as [string, string | undefined];
    const noVariant = (): void => {
        if (variant !== undefined) throw new InvalidInputError(`"${name}" takes no variant, got "${variant}"`, "battery");
    };
    switch (name) {
        case "advbench":
            noVariant();
            return [await loadAdvBench(join(directory, "advbench", "harmful_behaviors.csv"))];
        case "truthfulqa":
            noVariant();
            return [await loadTruthfulQa(join(directory, "truthfulqa", "TruthfulQA.csv"))];
        case "csqa":
            noVariant();
            return [await loadCsqa(join(directory, "csqa", "dev_rand_split.jsonl"))];
        case "gsm8k":
            noVariant();
            return [await loadGsm8k(join(directory, "gsm8k", "test.jsonl"))];
        case "humaneval":
            noVariant();
            return [await loadHumanEval(join(directory, "humaneval", "HumanEval.jsonl.gz"))];
        case "bbq":
            return Promise.all(
                (variant === undefined ? bbqCategories : [variant]).map((category) => loadBbq(category, join(directory, "bbq")))
            );
        case "mgsm": {
            // Any language whose file is in the folder, not only the shipped ones.
            const folder = join(directory, "mgsm");
            const present = await mgsmLanguagesIn(folder);
            if (variant !== undefined && present.length > 0 && !present.includes(variant))
                throw new UnknownLanguageError(
                    variant,
                    `MGSM has no language "${variant}" in ${folder} (no mgsm_${variant}.tsv); present: ${present.join(", ")}`,
                    "battery"
                );
            const languages = variant !== undefined ? [variant] : present.length > 0 ? present : [...mgsmLanguages];
            return Promise.all(languages.map((language) => loadMgsm(language, folder)));
        }
        default:
            throw new InvalidInputError(
                `unknown battery "${name}"; expected one of ${batteryNames.join(", ")}, or a .jsonl, .tsv or .csv file (docs/audits.md)`,
                "battery"
            );
    }
}
