import {join} from "node:path";
import {z} from "zod";
import {MalformedRowError} from "../errors.js";
import type {BatteryItem} from "./BatteryItem.js";
import {defaultDataDirectory} from "./defaultDataDirectory.js";
import {parseJsonLines} from "./parseJsonLines.js";
import {readDataFile} from "./readDataFile.js";

const humanEvalRowSchema = z.object({task_id: z.string().min(1), prompt: z.string().min(1)});

/**
 * HumanEval prompts (gzipped JSONL). specgate never executes generated code, so these items carry no
 * scorer: they measure byte identity and drift of code completions, not pass@k.
 */
export async function loadHumanEval(path = join(defaultDataDirectory(), "humaneval", "HumanEval.jsonl.gz")): Promise<BatteryItem[]> {
    return parseJsonLines(await readDataFile(path), path).map(({value, line}) => {
        const parsed = humanEvalRowSchema.safeParse(value);
        if (!parsed.success)
            throw new MalformedRowError(path, line, `${parsed.error.issues[0].path.join(".") || "row"}: ${parsed.error.issues[0].message}`);
        return {id: parsed.data.task_id, task: "humaneval", language: "python", prompt: parsed.data.prompt, scorer: "none"};
    });
}
