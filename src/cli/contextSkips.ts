import {type ContextSkips, mostSkipped as mostOfRunSkipped} from "../engine/fitsContext.js";
import {InsufficientDataError} from "../errors.js";

// How an audit counts the items it skipped because their prompt does not fit the context (see
// fitsContext): one stderr line naming them, and a run that skips more than half its items is
// insufficient data (exit 3), since what remains no longer stands for the battery.

/** More than half the items were skipped. */
export function mostSkipped(skips: Pick<ContextSkips, "ids" | "total">): boolean {
    return mostOfRunSkipped(skips.ids.length, skips.total);
}

/** One stderr line naming the skipped items, or "" when none was skipped. */
export function contextSkipsLine(command: string, skips: ContextSkips): string {
    if (skips.ids.length === 0) return "";
    const listed = skips.ids.slice(0, 10).join(", ") + (skips.ids.length > 10 ? ", …" : "");
    return (
        `${command}: skipped ${skips.ids.length} of ${skips.total} item(s) whose prompt does not fit the ${skips.contextSize}-token context ` +
        `with --max-tokens ${skips.maxTokens} (raise --context-size or lower --max-tokens): ${listed}\n`
    );
}

/** The insufficient-data line of a run that skipped most of its items, or "" when it did not. */
export function mostSkippedLine(command: string, skips: Pick<ContextSkips, "ids" | "total">): string {
    if (!mostSkipped(skips)) return "";
    return `${command}: INSUFFICIENT DATA: ${skips.ids.length} of ${skips.total} item(s) were skipped (more than half); the results do not stand for the battery\n`;
}

/** A Markdown section listing the skipped items, appended to a report; "" when none was skipped. */
export function skippedItemsSection(skips: ContextSkips): string {
    if (skips.ids.length === 0) return "";
    const listed = skips.ids.slice(0, 50).join(", ") + (skips.ids.length > 50 ? ", …" : "");
    return (
        "\n## Skipped items\n\n" +
        `${skips.ids.length} of ${skips.total} item(s) were not run: their prompt does not fit the ${skips.contextSize}-token context ` +
        `with ${skips.maxTokens} generated tokens, and no prompt is cut. ` +
        `${mostSkipped(skips) ? "**More than half the items were skipped: the results above do not stand for the battery (exit 3).** " : ""}` +
        `Raise --context-size or lower --max-tokens to run them: ${listed}.\n`
    );
}

/** The error of a run in which no item fits the context: nothing to measure, exit 3. */
export function noItemFits(skips: ContextSkips): InsufficientDataError {
    return new InsufficientDataError(
        `none of the ${skips.total} item(s) fits the ${skips.contextSize}-token context with --max-tokens ${skips.maxTokens}; ` +
            "raise --context-size or lower --max-tokens"
    );
}

/** The context rule's part of a JSON report: the context size and the ids of the skipped items. */
export function contextJson(skips: ContextSkips): {size: number; maxTokens: number; total: number; skipped: readonly string[]} {
    return {size: skips.contextSize, maxTokens: skips.maxTokens, total: skips.total, skipped: skips.ids};
}
