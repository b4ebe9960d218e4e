import type {BatteryChoice, ScorerKind} from "./BatteryItem.js";

/** GSM8K's final-answer line, as the corpus and GSM8K write references: "…\n#### 42". */
const finalAnswerMarker = /####\s*\S+\s*$/;

/**
 * The scorer of a battery item that names none, from what the item carries:
 *  - options (`choices`) and a reference: "multiple-choice" (the label the output picks);
 *  - a reference ending in a "#### N" final-answer line (GSM8K's form): "numeric" (the output's final
 *    number), so "#### 5" and an output "5" agree;
 *  - any other reference: "exact-match", a bare number included (a copy drill's "755 13" is text, and
 *    "numeric" would read only its last number); give "numeric" or "json" explicitly for those.
 *  - no reference: "none" (byte identity only).
 */
export function inferScorer(item: {readonly reference?: string; readonly choices?: readonly BatteryChoice[]}): ScorerKind {
    if (item.reference === undefined) return "none";
    if (item.choices !== undefined && item.choices.length > 0) return "multiple-choice";
    if (finalAnswerMarker.test(item.reference)) return "numeric";
    return "exact-match";
}
