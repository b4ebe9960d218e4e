import type {FairnessAnalysis} from "./FairnessAnalysis.js";

const times = (value: number): string => `${value.toFixed(2)}×`;

/**
 * What a fairness analysis lets one conclude, in three lines: each group's measured speed-up over
 * target-only decoding (with its bootstrap interval), how many items were skipped by the context rule,
 * and a one-line conclusion that does not claim more than the intervals allow — whether speculation
 * paid at all, and whether the fastest and slowest groups are told apart.
 */
export function fairnessConclusion(analysis: Pick<FairnessAnalysis, "by" | "groups" | "items" | "settings" | "context">): string[] {
    const groups = analysis.groups;
    const percent = Math.round(100 * analysis.settings.confidence);
    const perGroup = groups
        .map(
            (group) =>
                `${group.name} ${times(group.measured.speedup.estimate)} [${group.measured.speedup.low.toFixed(2)}, ${group.measured.speedup.high.toFixed(2)}]`
        )
        .join(", ");
    const skipped = analysis.context.skipped.length;
    const lines = [
        `speed-up vs target-only per ${analysis.by} (${percent}% CI): ${perGroup}`,
        `items skipped, prompt too long for the ${analysis.context.size}-token context with ${analysis.settings.maxTokens} generated tokens: ` +
            `${skipped} of ${skipped + analysis.items.length}${skipped > 0 ? " (not measured; raise --context-size or lower --max-tokens)" : ""}`
    ];
    if (groups.length === 0) return lines;
    const estimates = groups.map((group) => group.measured.speedup.estimate);
    const lowest = Math.min(...estimates);
    const highest = Math.max(...estimates);
    const fastest = groups[estimates.indexOf(highest)];
    const slowest = groups[estimates.indexOf(lowest)];
    const paid =
        highest < 1
            ? `speculation ran slower than target-only in every ${analysis.by} (${times(lowest)}–${times(highest)}): on this machine it does not pay, whatever the groups' differences`
            : lowest > 1
              ? `speculation ran faster than target-only in every ${analysis.by} (${times(lowest)}–${times(highest)})`
              : `speculation paid for ${groups
                    .filter((group) => group.measured.speedup.estimate > 1)
                    .map((group) => group.name)
                    .join(", ")} only (${times(lowest)}–${times(highest)})`;
    const apart = slowest.measured.speedup.high < fastest.measured.speedup.low;
    const ranking =
        groups.length < 2 || fastest === slowest
            ? ""
            : apart
              ? `; ${fastest.name} is faster than ${slowest.name} beyond both intervals`
              : `; the intervals of the fastest (${fastest.name}) and slowest (${slowest.name}) overlap, so this many items (${analysis.items.length}) do not establish their order`;
    lines.push(`conclusion: ${paid}${ranking}`);
    return lines;
}
