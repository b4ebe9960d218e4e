import type {BatteryItem} from "../batteries/BatteryItem.js";
import {InvalidInputError, SingleGroupError} from "../errors.js";
import {languageName} from "./languageName.js";

export type FairnessGrouping = "task" | "language";

export interface ItemGroup {
    readonly name: string;
    readonly items: readonly BatteryItem[];
}

/**
 * Splits a battery into the groups whose speed-ups are compared (Disparate Impacts paper's tasks T), in order of
 * first appearance. Every language tag must be a known one, and there must be at least two groups:
 * unfairness across one group is meaningless, and a silent 0 would read as "fair".
 */
export function groupBatteryItems(items: readonly BatteryItem[], by: FairnessGrouping): ItemGroup[] {
    if (items.length === 0) throw new InvalidInputError("has no items", "items");
    const groups = new Map<string, BatteryItem[]>();
    for (const item of items) {
        if (item.language !== undefined) languageName(item.language, `item ${item.id}: language`);
        const key = by === "task" ? item.task : item.language;
        if (key === undefined) throw new InvalidInputError(`item ${item.id} has no language; group by task or tag every item`, "by");
        const group = groups.get(key) ?? [];
        group.push(item);
        groups.set(key, group);
    }
    if (groups.size < 2)
        throw new SingleGroupError(
            `every item falls in one ${by} ("${[...groups.keys()][0]}"); a fairness analysis compares at least two groups`,
            "by"
        );
    return [...groups].map(([name, groupItems]) => ({name, items: groupItems}));
}

/** Language when every item carries one (the paper's groups are languages), otherwise task. */
export function defaultGrouping(items: readonly BatteryItem[]): FairnessGrouping {
    return items.length > 0 && items.every((item) => item.language !== undefined) ? "language" : "task";
}
