import {z} from "zod";
import {MalformedRowError} from "../errors.js";
import type {BatteryItem} from "./BatteryItem.js";
import {inferScorer} from "./inferScorer.js";
import {type JsonLine, parseJsonLines} from "./parseJsonLines.js";
import {extractFinalNumber} from "./scorers/extractFinalNumber.js";
import {readDataFile} from "./readDataFile.js";

const toolCallSchema = z.strictObject({
    id: z.string(),
    type: z.literal("function"),
    function: z.strictObject({name: z.string().min(1), arguments: z.string()})
});
const messageSchema = z.discriminatedUnion("role", [
    z.strictObject({role: z.enum(["system", "user"]), content: z.string()}),
    z.strictObject({role: z.literal("assistant"), content: z.string(), tool_calls: z.array(toolCallSchema).min(1).optional()}),
    z.strictObject({role: z.literal("tool"), content: z.string(), tool_call_id: z.string()})
]);
const toolSchema = z.strictObject({
    type: z.literal("function"),
    function: z.strictObject({
        name: z.string().min(1),
        description: z.string().optional(),
        parameters: z.record(z.string(), z.unknown()).optional()
    })
});

/**
 * The generic battery format, one JSON object per line:
 *   {"id": "…", "task": "…", "prompt": "…" | "messages": [{"role", "content"}…], "tools"?: […],
 *    "reference"?: "…",
 *    "choices"?: [{"label", "text"}…], "language"?: "…", "scorer"?: "refusal|multiple-choice|bbq|numeric|exact-match|json|none",
 *    "metadata"?: {string: string}}
 * Without `scorer`, inferScorer picks one from the item (a "#### N" reference is scored by its final
 * number, a reference with choices by the chosen label, any other by exact match; no reference: byte
 * identity only). A numeric reference is stored as its canonical number. Chat items may carry tool
 * calls as OpenAI writes them: an assistant message's `tool_calls` ([{id, type: "function",
 * function: {name, arguments}}], arguments a JSON text), `tool` messages with the call's result and
 * `tool_call_id`, and the item's `tools` ([{type: "function", function: {name, description?,
 * parameters?}}]); a decode path renders them with the model's chat template.
 */
export const batteryItemSchema = z.strictObject({
    id: z.string().min(1),
    task: z.string().min(1),
    language: z.string().min(1).optional(),
    prompt: z.string().optional(),
    messages: z.array(messageSchema).min(1).optional(),
    tools: z.array(toolSchema).min(1).optional(),
    reference: z.string().optional(),
    choices: z.array(z.strictObject({label: z.string().min(1), text: z.string()})).optional(),
    scorer: z.enum(["refusal", "multiple-choice", "bbq", "numeric", "exact-match", "json", "none"]).optional(),
    metadata: z.record(z.string(), z.string()).optional()
});

export function parseJsonlBattery(text: string, file: string): BatteryItem[] {
    return parseBatteryRows(parseJsonLines(text, file), file);
}

/**
 * Battery items from rows already read (JSONL lines, or table rows turned into objects), each checked
 * against the format above; a bad row is a MalformedRowError naming the file, the line and the field.
 */
export function parseBatteryRows(rows: readonly JsonLine[], file: string): BatteryItem[] {
    const seen = new Map<string, number>();
    return rows.map(({value, line}) => {
        const parsed = batteryItemSchema.safeParse(value);
        if (!parsed.success) {
            const issue = parsed.error.issues[0];
            // The field at fault leads: an unknown one by its own name, with the fields the format has.
            if (issue.code === "unrecognized_keys")
                throw new MalformedRowError(
                    file,
                    line,
                    `${[...issue.path, issue.keys[0]].join(".")}: unknown field${issue.path.length === 0 ? ` (an item has ${Object.keys(batteryItemSchema.shape).join(", ")})` : ""}`
                );
            throw new MalformedRowError(file, line, `${issue.path.join(".") || "row"}: ${issue.message}`);
        }
        const item = parsed.data;
        if ((item.prompt === undefined) === (item.messages === undefined))
            throw new MalformedRowError(file, line, 'needs exactly one of "prompt" and "messages"');
        if (item.tools !== undefined && item.messages === undefined)
            throw new MalformedRowError(file, line, '"tools" needs "messages" (a chat item)');
        for (const [index, message] of (item.messages ?? []).entries()) {
            for (const [callIndex, call] of (message.role === "assistant" ? (message.tool_calls ?? []) : []).entries()) {
                try {
                    JSON.parse(call.function.arguments);
                } catch (error) {
                    throw new MalformedRowError(
                        file,
                        line,
                        `messages.${index}.tool_calls.${callIndex}.function.arguments: is not JSON (${(error as Error).message})`
                    );
                }
            }
        }
        const previous = seen.get(item.id);
        if (previous !== undefined) throw new MalformedRowError(file, line, `duplicate id "${item.id}" (first on line ${previous})`);
        seen.set(item.id, line);
        if (
            (item.scorer === "multiple-choice" ||
                item.scorer === "numeric" ||
                item.scorer === "exact-match" ||
                item.scorer === "json" ||
                item.scorer === "bbq") &&
            item.reference === undefined
        )
            throw new MalformedRowError(file, line, `scorer "${item.scorer}" needs a "reference"`);
        if (item.scorer === "bbq" && item.metadata?.unknownChoice === undefined)
            throw new MalformedRowError(file, line, 'scorer "bbq" needs metadata.unknownChoice');
        const scorer = item.scorer ?? inferScorer(item);
        if (scorer !== "numeric") return {...item, scorer};
        // "#### 5", "5", "1,234" and "The answer is 5" all mean the number the output's final number must equal.
        const reference = extractFinalNumber(item.reference!);
        if (reference === null)
            throw new MalformedRowError(
                file,
                line,
                `scorer "numeric" needs a number in "reference", got ${JSON.stringify(item.reference)}`
            );
        return {...item, reference, scorer};
    });
}

/** Reads a battery in the generic JSONL format; malformed rows are MalformedRowErrors naming file and line. */
export async function loadJsonlBattery(path: string): Promise<BatteryItem[]> {
    return parseJsonlBattery(await readDataFile(path), path);
}
