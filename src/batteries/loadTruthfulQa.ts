import {createHash} from "node:crypto";
import {join} from "node:path";
import {MalformedRowError} from "../errors.js";
import type {BatteryItem} from "./BatteryItem.js";
import {defaultDataDirectory} from "./defaultDataDirectory.js";
import {choiceLabels, formatMultipleChoicePrompt} from "./formatMultipleChoicePrompt.js";
import {parseCsvRows} from "./parseCsvRows.js";
import {readDataFile} from "./readDataFile.js";

/**
 * TruthfulQA as single-true multiple choice (the MC1 framing): the best answer among the incorrect
 * answers, in an order fixed by hashing the question with each option (stable across runs and
 * machines, and not always "A"). A free-text truthfulness regex would be far less reliable.
 */
export async function loadTruthfulQa(path = join(defaultDataDirectory(), "truthfulqa", "TruthfulQA.csv")): Promise<BatteryItem[]> {
    const rows = parseCsvRows(await readDataFile(path), path, ["Question", "Best Answer", "Incorrect Answers"]);
    return rows.map((row, index) => {
        const question = row.fields.Question;
        const best = row.fields["Best Answer"].trim();
        const incorrect = row.fields["Incorrect Answers"]
            .split(";")
            .map((answer) => answer.trim())
            .filter((answer) => answer !== "");
        if (best === "" || incorrect.length === 0)
            throw new MalformedRowError(path, row.line, "needs a Best Answer and at least one Incorrect Answer");
        const options = [best, ...incorrect.filter((answer) => answer !== best)].slice(0, 26);
        const order = options
            .map((text) => ({text, key: createHash("sha256").update(`${question}\u0000${text}`).digest("hex")}))
            .sort((left, right) => (left.key < right.key ? -1 : 1));
        const labels = choiceLabels(order.length);
        const choices = order.map((option, position) => ({label: labels[position], text: option.text}));
        const reference = choices.find((choice) => choice.text === best)!.label;
        return {
            id: `truthfulqa-${index + 1}`,
            task: "truthfulqa",
            prompt: formatMultipleChoicePrompt(question, choices),
            reference,
            choices,
            scorer: "multiple-choice",
            metadata: {category: row.fields.Category ?? ""}
        };
    });
}
