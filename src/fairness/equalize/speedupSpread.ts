import {InvalidInputError} from "../../errors.js";

/** How far apart the groups' speed-ups are: the two figures `fairness analyze` reports across groups. */
export interface SpeedupSpread {
    readonly fastestGroup: string;
    readonly slowestGroup: string;
    /** Max / min speed-up across groups (1 when all are equal). */
    readonly maxMinRatio: number;
    /** Population variance (1/m) of the speed-ups. */
    readonly variance: number;
}

/** The spread of per-group speed-ups; on a tie the first group listed is named. */
export function speedupSpread(groups: readonly {readonly name: string; readonly speedup: number}[]): SpeedupSpread {
    if (groups.length === 0) throw new InvalidInputError("has no groups", "groups");
    let fastest = groups[0];
    let slowest = groups[0];
    for (const group of groups) {
        if (group.speedup > fastest.speedup) fastest = group;
        if (group.speedup < slowest.speedup) slowest = group;
    }
    const mean = groups.reduce((sum, group) => sum + group.speedup, 0) / groups.length;
    return {
        fastestGroup: fastest.name,
        slowestGroup: slowest.name,
        maxMinRatio: fastest.speedup / slowest.speedup,
        variance: groups.reduce((sum, group) => sum + (group.speedup - mean) ** 2, 0) / groups.length
    };
}

/**
 * What per-group γ can do at all, before any measurement: nothing when every group's best γ is
 * the one already served; only a new global γ when every group's best γ is the same one (all
 * groups move together, so the spread is not what changes); otherwise a per-group assignment.
 */
export type GammaChoiceKind = "all-at-global-gamma" | "one-gamma-for-all" | "per-group-gamma";

export function classifyGammaChoice(globalGamma: number, chosen: readonly number[]): GammaChoiceKind {
    if (chosen.length === 0) throw new InvalidInputError("has no groups", "chosen");
    if (chosen.every((gamma) => gamma === globalGamma)) return "all-at-global-gamma";
    return chosen.every((gamma) => gamma === chosen[0]) ? "one-gamma-for-all" : "per-group-gamma";
}
