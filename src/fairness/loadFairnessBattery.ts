import type {BatteryItem} from "../batteries/BatteryItem.js";
import {defaultDataDirectory} from "../batteries/defaultDataDirectory.js";
import {loadBattery} from "../batteries/loadBattery.js";

/**
 * The battery of a fairness run: loadBattery, which refuses an MGSM language tag whose file is not in
 * the data folder (UnknownLanguageError, naming the languages present) before anything runs.
 */
export async function loadFairnessBattery(spec: string, dataDirectory = defaultDataDirectory()): Promise<BatteryItem[]> {
    return loadBattery(spec, dataDirectory);
}
