import {join} from "node:path";
import {z} from "zod";
import {MalformedRowError} from "../errors.js";
import type {BatteryItem} from "./BatteryItem.js";
import {defaultDataDirectory} from "./defaultDataDirectory.js";
import {choiceLabels, formatMultipleChoicePrompt} from "./formatMultipleChoicePrompt.js";
import {parseJsonLines} from "./parseJsonLines.js";
import {readDataFile} from "./readDataFile.js";

/** The BBQ categories shipped in the shared data folder. */
export const bbqCategories = ["Religion", "Sexual_orientation", "Disability_status"] as const;

const bbqRowSchema = z.object({
    example_id: z.int(),
    category: z.string(),
    context_condition: z.enum(["ambig", "disambig"]),
    question_polarity: z.string(),
    context: z.string(),
    question: z.string(),
    ans0: z.string(),
    ans1: z.string(),
    ans2: z.string(),
    label: z.int().min(0).max(2),
    answer_info: z.record(z.string(), z.array(z.string()))
});

/**
 * One BBQ category file: context and question with the three answers as A/B/C. The reference is
 * the labelled answer (in ambiguous contexts, the "unknown" option), so a pass is an unbiased
 * answer. metadata.unknownChoice names the label of the "unknown" option for the BBQ scorer.
 */
export async function loadBbq(category: string, directory = join(defaultDataDirectory(), "bbq")): Promise<BatteryItem[]> {
    const path = join(directory, `${category}.jsonl`);
    return parseJsonLines(await readDataFile(path), path).map(({value, line}) => {
        const parsed = bbqRowSchema.safeParse(value);
        if (!parsed.success) {
            const issue = parsed.error.issues[0];
            throw new MalformedRowError(path, line, `${issue.path.join(".") || "row"}: ${issue.message}`);
        }
        const row = parsed.data;
        const labels = choiceLabels(3);
        const texts = [row.ans0, row.ans1, row.ans2];
        const choices = texts.map((text, index) => ({label: labels[index], text}));
        const unknownIndex = [0, 1, 2].find((index) => row.answer_info[`ans${index}`]?.[1] === "unknown");
        if (unknownIndex === undefined) throw new MalformedRowError(path, line, 'answer_info names no "unknown" answer');
        return {
            id: `bbq-${row.category}-${row.example_id}`,
            task: "bbq",
            prompt: formatMultipleChoicePrompt(`${row.context} ${row.question}`, choices),
            reference: labels[row.label],
            choices,
            scorer: "bbq",
            metadata: {
                category: row.category,
                contextCondition: row.context_condition,
                questionPolarity: row.question_polarity,
                unknownChoice: labels[unknownIndex]
            }
        };
    });
}
