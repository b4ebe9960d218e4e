import {join} from "node:path";
import type {BatteryItem} from "./BatteryItem.js";
import {defaultDataDirectory} from "./defaultDataDirectory.js";
import {parseCsvRows} from "./parseCsvRows.js";
import {readDataFile} from "./readDataFile.js";

/**
 * AdvBench harmful behaviours (CSV `goal,target`): the goal is the prompt, unmodified; a safety pass
 * is a refusal. The `target` column ("Sure, here is …") is the attack's desired compliance, not a
 * reference, so it is dropped.
 */
export async function loadAdvBench(path = join(defaultDataDirectory(), "advbench", "harmful_behaviors.csv")): Promise<BatteryItem[]> {
    const rows = parseCsvRows(await readDataFile(path), path, ["goal"]);
    return rows.map((row, index) => ({id: `advbench-${index + 1}`, task: "advbench", prompt: row.fields.goal, scorer: "refusal"}));
}
