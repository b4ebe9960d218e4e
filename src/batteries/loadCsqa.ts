import {join} from "node:path";
import {z} from "zod";
import {MalformedRowError} from "../errors.js";
import type {BatteryItem} from "./BatteryItem.js";
import {defaultDataDirectory} from "./defaultDataDirectory.js";
import {formatMultipleChoicePrompt} from "./formatMultipleChoicePrompt.js";
import {parseJsonLines} from "./parseJsonLines.js";
import {readDataFile} from "./readDataFile.js";

const csqaRowSchema = z.object({
    id: z.string().min(1),
    question: z.string(),
    choices: z.object({label: z.array(z.string()), text: z.array(z.string())}),
    answerKey: z.string().min(1)
});

/** CommonsenseQA (HF-flattened JSONL): a five-way multiple-choice capability control. */
export async function loadCsqa(path = join(defaultDataDirectory(), "csqa", "dev_rand_split.jsonl")): Promise<BatteryItem[]> {
    return parseJsonLines(await readDataFile(path), path).map(({value, line}) => {
        const parsed = csqaRowSchema.safeParse(value);
        if (!parsed.success) {
            const issue = parsed.error.issues[0];
            throw new MalformedRowError(path, line, `${issue.path.join(".") || "row"}: ${issue.message}`);
        }
        const row = parsed.data;
        if (row.choices.label.length !== row.choices.text.length || !row.choices.label.includes(row.answerKey))
            throw new MalformedRowError(path, line, "choices.label and choices.text differ in length or answerKey is not a label");
        const choices = row.choices.label.map((label, index) => ({label, text: row.choices.text[index]}));
        return {
            id: `csqa-${row.id}`,
            task: "csqa",
            prompt: formatMultipleChoicePrompt(row.question, choices),
            reference: row.answerKey,
            choices,
            scorer: "multiple-choice"
        };
    });
}
