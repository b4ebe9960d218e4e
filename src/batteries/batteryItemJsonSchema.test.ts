import {readFileSync} from "node:fs";
import {describe, expect, it} from "vitest";
import {batteryItemJsonSchema} from "./batteryItemJsonSchema.js";

describe("docs/battery-item.schema.json", () => {
    it("is the schema the JSONL loader checks with, written out", () => {
        // Regenerate after changing batteryItemSchema: print JSON.stringify(batteryItemJsonSchema(), null, 2) into the file.
        const committed: unknown = JSON.parse(readFileSync(new URL("../../docs/battery-item.schema.json", import.meta.url), "utf8"));
        expect(committed).toEqual(batteryItemJsonSchema());
    });

    it("refuses unknown fields and requires id and task", () => {
        const schema = batteryItemJsonSchema() as {required: string[]; additionalProperties: boolean};
        expect(schema.required).toEqual(expect.arrayContaining(["id", "task"]));
        expect(schema.additionalProperties).toBe(false);
    });
});
