import {mkdtemp, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {ExitCode} from "../exitCodes.js";
import {runCliCaptured} from "../testing/runCliCaptured.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

const target = new URL("../../../models/target/model.gguf", import.meta.url).pathname;
const draft = new URL("../../../models/draft/model.gguf", import.meta.url).pathname;
let directory: string;

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-json-schema-"));
});

afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

describe("generate --json-schema", () => {
    it("constrains speculative output to JSON matching the schema, at T = 1 for several seeds", async () => {
        const schema = join(directory, "schema.json");
        await writeFile(
            schema,
            JSON.stringify({
                type: "object",
                properties: {name: {type: "string", maxLength: 8}, age: {type: "integer"}, kind: {enum: ["aunt", "uncle"]}},
                required: ["name", "age", "kind"],
                additionalProperties: false
            })
        );
        for (const seed of [1, 2, 3]) {
            const run = await runCliCaptured(
                "generate",
                "The family:",
                "--target",
                target,
                "--draft",
                draft,
                "--json-schema",
                schema,
                "--temperature",
                "1",
                "--max-tokens",
                "120",
                "--seed",
                String(seed),
                "--json",
                "-"
            );
            expect(run.code, run.stderr).toBe(ExitCode.success);
            const value = JSON.parse((JSON.parse(run.stdout) as {text: string}).text) as {name: string; age: number; kind: string};
            expect(Object.keys(value).sort()).toEqual(["age", "kind", "name"]);
            expect(value.name.length).toBeLessThanOrEqual(8);
            expect(Number.isInteger(value.age)).toBe(true);
            expect(["aunt", "uncle"]).toContain(value.kind);
        }
    });

    it("compiles the schema within --grammar-timeout-ms and fails past it with serve's message (exit 2)", async () => {
        // Within the schema limits, but about a second of conversion: 70 objects of 100 optional properties.
        const inner = {type: "object", properties: Object.fromEntries(Array.from({length: 100}, (_, j) => [`${j}`, {}]))};
        const schema = join(directory, "slow.json");
        await writeFile(
            schema,
            JSON.stringify({
                type: "object",
                properties: Object.fromEntries(Array.from({length: 70}, (_, i) => [`o${i}`, inner])),
                required: Array.from({length: 70}, (_, i) => `o${i}`)
            })
        );
        const run = await runCliCaptured("generate", "x", "--target", target, "--json-schema", schema, "--grammar-timeout-ms", "1");
        expect(run.code, run.stderr).toBe(ExitCode.badInput);
        expect(run.stderr).toContain(schema);
        expect(run.stderr).toMatch(/converting the schema to a grammar took longer than the budget of 1 ms \(--grammar-timeout-ms\)/);
    });

    it("refuses a schema the grammar would not enforce, naming the file and the keyword (exit 2)", async () => {
        const schema = join(directory, "bad.json");
        await writeFile(schema, JSON.stringify({type: "number", multipleOf: 2}));
        const run = await runCliCaptured("generate", "x", "--target", target, "--json-schema", schema);
        expect(run.code).toBe(ExitCode.badInput);
        expect(run.stderr).toContain("multipleOf");
        expect(run.stderr).toContain(schema);
    });
});
