import type {BatteryItem} from "../batteries/BatteryItem.js";
import {EmptyBatteryError, ScorerMismatchError} from "../errors.js";

/**
 * Checks that every item yields a pass/fail, so accuracy means something: a battery without a scorer
 * ("none", i.e. JSONL rows without a reference) would otherwise count as 0% everywhere and make every
 * setting look equally accurate.
 */
export function assertAccuracyBattery(items: readonly BatteryItem[], field = "items"): void {
    if (items.length === 0) throw new EmptyBatteryError("has no items; a sweep needs at least one scored item", field);
    const problems = items.flatMap((item) => {
        const problem = scorerProblem(item);
        return problem == null ? [] : [{id: item.id, problem}];
    });
    if (problems.length === 0) return;
    const shown = problems
        .slice(0, 3)
        .map(({id, problem}) => `"${id}" ${problem}`)
        .join("; ");
    const more = problems.length > 3 ? ` (and ${problems.length - 3} more)` : "";
    throw new ScorerMismatchError(
        problems.map(({id}) => id),
        `${problems.length} of ${items.length} items cannot be scored for accuracy: ${shown}${more}. Give each item a "reference" (and "choices" for multiple-choice) or use a battery with a scorer`,
        field
    );
}

function scorerProblem(item: BatteryItem): string | null {
    switch (item.scorer) {
        case "none":
            return 'has no scorer (no "reference")';
        case "refusal":
            return null;
        case "multiple-choice":
        case "bbq":
            if (item.reference === undefined) return `uses scorer "${item.scorer}" without a reference`;
            return item.choices == null || item.choices.length === 0 ? `uses scorer "${item.scorer}" without choices` : null;
        case "numeric":
        case "exact-match":
        case "json":
            return item.reference === undefined ? `uses scorer "${item.scorer}" without a reference` : null;
    }
}
