import {createHash} from "node:crypto";
import type {BatteryItem} from "../batteries/BatteryItem.js";
import {EmptyBatteryError, InvalidInputError} from "../errors.js";

export interface BatterySplit {
    readonly calibration: readonly BatteryItem[];
    readonly evaluation: readonly BatteryItem[];
}

/**
 * Disjoint calibration and evaluation splits, stratified by task: within each task the items are
 * ordered by a salted hash of their id and the first round(share · n) go to calibration. An item's
 * side depends only on its id, its task's size and the seed — not on file order, and not on what
 * else a run does — so a threshold tuned on one split is judged on data it never saw (TAIS paper's
 * warning about circular cut-offs). Tasks with two or more items contribute to both splits.
 */
export function splitBattery(items: readonly BatteryItem[], calibrationShare: number, seed = 0): BatterySplit {
    if (!(calibrationShare > 0 && calibrationShare < 1))
        throw new InvalidInputError(`must lie strictly between 0 and 1, got ${calibrationShare}`, "calibrationShare");
    if (items.length === 0) throw new EmptyBatteryError("has no items to split", "items");
    const byTask = new Map<string, BatteryItem[]>();
    for (const item of items) byTask.set(item.task, [...(byTask.get(item.task) ?? []), item]);
    const calibrationIds = new Set<string>();
    for (const group of byTask.values()) {
        const ranked = group
            .map((item) => ({item, key: createHash("sha256").update(`${seed}\u0000${item.id}`).digest("hex")}))
            .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
        const wanted = Math.round(calibrationShare * group.length);
        const count =
            group.length === 1
                ? parseInt(ranked[0].key.slice(0, 8), 16) / 2 ** 32 < calibrationShare
                    ? 1
                    : 0
                : Math.min(group.length - 1, Math.max(1, wanted));
        for (const {item} of ranked.slice(0, count)) calibrationIds.add(item.id);
    }
    const calibration = items.filter((item) => calibrationIds.has(item.id));
    const evaluation = items.filter((item) => !calibrationIds.has(item.id));
    if (calibration.length === 0 || evaluation.length === 0)
        throw new EmptyBatteryError(
            `${items.length} item(s) cannot make two non-empty splits at share ${calibrationShare}; calibration needs a larger battery`,
            "items"
        );
    return {calibration, evaluation};
}
