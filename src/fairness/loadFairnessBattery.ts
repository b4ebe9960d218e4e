import type {BatteryItem} from "../batteries/BatteryItem.js";
import {defaultDataDirectory} from "../batteries/defaultDataDirectory.js";
import {loadBattery} from "../batteries/loadBattery.js";
import {mgsmLanguages} from "../batteries/loadMgsm.js";
import {UnknownLanguageError} from "../errors.js";

/**
 * loadBattery, after checking the language variants it can check up front: `mgsm:xx` would
 * otherwise surface as a missing file, which hides that the language tag is the problem.
 */
export async function loadFairnessBattery(spec: string, dataDirectory = defaultDataDirectory()): Promise<BatteryItem[]> {
    for (const entry of spec.split(",").map((part) => part.trim())) {
        const match = /^mgsm:([^@]+)(?:@\d+)?$/.exec(entry);
        if (match != null && !(mgsmLanguages as readonly string[]).includes(match[1]))
            throw new UnknownLanguageError(
                match[1],
                `MGSM has no language "${match[1]}"; shipped: ${mgsmLanguages.join(", ")}`,
                "--battery"
            );
    }
    return loadBattery(spec, dataDirectory);
}
