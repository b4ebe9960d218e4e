import type {BatteryChoice} from "../BatteryItem.js";

function escapeRegExp(text: string): string {
    return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * The option a multiple-choice output picks, as its label, or null when it picks none or several.
 * In order, the first rule that finds a valid label wins:
 *  1. the output opens with the label: "B", "B.", "B)", "(B)", "B: library", "B library";
 *  2. an explicit statement: "the answer is B", "Answer: (B)", "correct option is B";
 *  3. exactly one distinct parenthesised label anywhere: "… so (C) fits";
 *  4. exactly one option's text appears in the output (case-insensitive, whole words).
 * Labels are matched case-sensitively in rules 1–3 so the article "a" is never read as option A.
 */
export function extractChoiceLetter(output: string, choices: readonly BatteryChoice[]): string | null {
    const labels = new Set(choices.map((choice) => choice.label));
    const text = output.trim();
    const opening = /^\(?([A-Z])(?:[.):\]]|\n|$| (.*))/s.exec(text);
    // "A bank" is option A only when the words after the letter are option A's text: "A revolving door" is an article.
    if (
        opening != null &&
        labels.has(opening[1]) &&
        (opening[2] === undefined ||
            opening[2].toLowerCase().startsWith(choices.find((choice) => choice.label === opening[1])!.text.toLowerCase()))
    )
        return opening[1];
    const statement = /\b(?:answer|option|choice)(?:\s+(?:is|would be|will be))?\s*[:：]?\s*\(?([A-Z])(?![A-Za-z])/i.exec(text);
    if (statement != null && labels.has(statement[1])) return statement[1];
    const parenthesised = new Set([...text.matchAll(/\(([A-Z])\)/g)].map((match) => match[1]).filter((label) => labels.has(label)));
    if (parenthesised.size === 1) return [...parenthesised][0];
    const mentioned = choices.filter(
        (choice) =>
            choice.text.trim() !== "" &&
            new RegExp(`(?<![\\p{L}\\p{N}])${escapeRegExp(choice.text.trim())}(?![\\p{L}\\p{N}])`, "iu").test(text)
    );
    return mentioned.length === 1 ? mentioned[0].label : null;
}
