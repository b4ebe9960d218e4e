import {z} from "zod";
import {batteryItemSchema} from "./loadJsonlBattery.js";

/**
 * The JSON Schema (draft 2020-12) of one line of a JSONL battery, generated from the schema the loader
 * checks with (batteryItemSchema), plus the one rule a field schema cannot say: exactly one of
 * `prompt` and `messages`. docs/battery-item.schema.json is this, written out (a test keeps the two equal).
 */
export function batteryItemJsonSchema(): Record<string, unknown> {
    const generated = z.toJSONSchema(batteryItemSchema) as Record<string, unknown>;
    return {
        $schema: generated.$schema,
        title: "specgate battery item",
        description:
            "One line of a JSONL battery (docs/audits.md, Battery files). Rules the schema cannot state: ids are unique in a file; " +
            'scorers "numeric", "exact-match", "json", "multiple-choice" and "bbq" need a reference, "numeric" a number in it; "bbq" needs metadata.unknownChoice; ' +
            "tool-call arguments are JSON text. `specgate battery check FILE` checks all of it and names the line and field of the first problem.",
        ...Object.fromEntries(Object.entries(generated).filter(([key]) => key !== "$schema")),
        oneOf: [{required: ["prompt"]}, {required: ["messages"]}]
    };
}
