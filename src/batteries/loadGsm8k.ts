import {join} from "node:path";
import {z} from "zod";
import {MalformedRowError} from "../errors.js";
import type {BatteryItem} from "./BatteryItem.js";
import {defaultDataDirectory} from "./defaultDataDirectory.js";
import {parseJsonLines} from "./parseJsonLines.js";
import {readDataFile} from "./readDataFile.js";
import {normalizeNumberText} from "./scorers/extractFinalNumber.js";

const gsm8kRowSchema = z.object({question: z.string().min(1), answer: z.string()});

/** GSM8K test (JSONL `{question, answer}`): the reference is the number after the answer's `#### ` marker. */
export async function loadGsm8k(path = join(defaultDataDirectory(), "gsm8k", "test.jsonl")): Promise<BatteryItem[]> {
    return parseJsonLines(await readDataFile(path), path).map(({value, line}, index) => {
        const parsed = gsm8kRowSchema.safeParse(value);
        if (!parsed.success)
            throw new MalformedRowError(path, line, `${parsed.error.issues[0].path.join(".") || "row"}: ${parsed.error.issues[0].message}`);
        const marker = /####\s*(.+?)\s*$/.exec(parsed.data.answer);
        const reference = marker == null ? null : normalizeNumberText(marker[1]);
        if (reference == null) throw new MalformedRowError(path, line, 'answer has no numeric final answer after "####"');
        return {id: `gsm8k-${index + 1}`, task: "gsm8k", language: "en", prompt: parsed.data.question, reference, scorer: "numeric"};
    });
}
