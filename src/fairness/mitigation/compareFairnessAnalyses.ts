import {InvalidInputError} from "../../errors.js";
import type {FairnessAnalysis} from "../FairnessAnalysis.js";

export interface BeforeAfter {
    readonly before: number;
    readonly after: number;
    /** (after − before) / before × 100; null when before is 0. */
    readonly percentChange: number | null;
}

export interface GroupChange {
    readonly name: string;
    /** Measured α_T (accepted / drafted tokens). */
    readonly alpha: BeforeAfter;
    /** (after − before) × 100. */
    readonly alphaChangePoints: number;
    readonly speedup: BeforeAfter;
    readonly crossEntropy: BeforeAfter;
}

export interface FairnessComparison {
    readonly unfairness: BeforeAfter;
    /** Population variance of the measured α_T across groups. */
    readonly acceptanceVariance: BeforeAfter;
    readonly groups: readonly GroupChange[];
    /** The group with the highest measured α_T before mitigation: the one a mitigation may lower by at most 1 point. */
    readonly bestGroup: {readonly name: string; readonly alphaChangePoints: number};
    /** Groups whose α_T fell, largest drop first (the target-task regression). */
    readonly regressions: readonly {readonly name: string; readonly alphaDropPoints: number}[];
    /** Whether every item's target-only output has the same token digest in both analyses. */
    readonly targetOutputsIdentical: boolean;
    readonly changedTargetOutputs: readonly string[];
}

/** Before/after figures of one mitigation from two analyses of the same battery, settings and seed. */
export function compareFairnessAnalyses(before: FairnessAnalysis, after: FairnessAnalysis): FairnessComparison {
    const names = before.groups.map((group) => group.name);
    if (names.join("\u0000") !== after.groups.map((group) => group.name).join("\u0000"))
        throw new InvalidInputError("the two analyses have different groups", "analyses");
    const change = (from: number, to: number): BeforeAfter => ({
        before: from,
        after: to,
        percentChange: from === 0 ? null : ((to - from) / from) * 100
    });
    const groups = before.groups.map((group, index) => {
        const later = after.groups[index];
        return {
            name: group.name,
            alpha: change(group.measured.acceptanceRate, later.measured.acceptanceRate),
            alphaChangePoints: (later.measured.acceptanceRate - group.measured.acceptanceRate) * 100,
            speedup: change(group.measured.speedup.estimate, later.measured.speedup.estimate),
            crossEntropy: change(group.distributions.crossEntropy.estimate, later.distributions.crossEntropy.estimate)
        };
    });
    const best = groups.reduce((top, group) => (group.alpha.before > top.alpha.before ? group : top), groups[0]);
    const digests = new Map(after.items.map((item) => [item.id, item.run.baselineDigest]));
    const changedTargetOutputs = before.items.filter((item) => digests.get(item.id) !== item.run.baselineDigest).map((item) => item.id);
    return {
        unfairness: change(before.across.unfairness.estimate, after.across.unfairness.estimate),
        acceptanceVariance: change(before.across.acceptanceVariance, after.across.acceptanceVariance),
        groups,
        bestGroup: {name: best.name, alphaChangePoints: best.alphaChangePoints},
        regressions: groups
            .filter((group) => group.alphaChangePoints < 0)
            .map((group) => ({name: group.name, alphaDropPoints: -group.alphaChangePoints}))
            .sort((a, b) => b.alphaDropPoints - a.alphaDropPoints),
        targetOutputsIdentical: changedTargetOutputs.length === 0 && before.items.length === after.items.length,
        changedTargetOutputs
    };
}
