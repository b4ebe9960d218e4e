import type {BatteryChoice} from "./BatteryItem.js";

/** Labels A, B, C, … for `count` options (at most 26). */
export function choiceLabels(count: number): string[] {
    return Array.from({length: count}, (_value, index) => String.fromCharCode(65 + index));
}

/**
 * The one prompt layout every multiple-choice battery uses, so the scorers can rely on letter
 * answers: the stem, one "X. text" line per option, and an instruction to answer with the letter.
 */
export function formatMultipleChoicePrompt(stem: string, choices: readonly BatteryChoice[]): string {
    const options = choices.map((choice) => `${choice.label}. ${choice.text}`).join("\n");
    return `${stem.trim()}\n${options}\nAnswer with the letter of the correct option.\nAnswer:`;
}
