/**
 * Where structured-output schemas get expensive: the time to convert a JSON schema to GBNF (llama.cpp's
 * json_schema_to_grammar), to build its grammar (llama.cpp parses it and builds the first stacks) and
 * to run its first steps (a whole-vocabulary mask and an accept each) against the size of each part a request controls. The structured-output limits in docs/serving.md
 * ("Structured output limits", src/constraints/schemaLimits.ts) come from this table.
 *
 *   npx tsx bench/grammarLimits.ts                 # every family, the family target's vocabulary
 *   npx tsx bench/grammarLimits.ts --family enum --stop-ms 2000
 *
 * Each family grows its size until one measurement takes more than --stop-ms (conversion,
 * construction and the first four steps' masks and accepts together); every measurement runs in a child process killed after --kill-ms, so a
 * size that hangs is reported as "> kill-ms" and ends the family.
 */
import {spawnSync} from "node:child_process";
import {parseArgs} from "node:util";

const {values} = parseArgs({
    options: {
        model: {type: "string", default: "models/target/model.gguf"},
        family: {type: "string"},
        "stop-ms": {type: "string", default: "2000"},
        "kill-ms": {type: "string", default: "20000"},
        measure: {type: "string"},
        size: {type: "string"}
    }
});

/** A schema of `n` of each kind of part. */
const families: Record<string, {sizes: number[]; schema: (n: number) => unknown}> = {
    "optional-properties": {
        sizes: [10, 20, 40, 80, 120, 160, 240, 320, 480, 640],
        schema: (n) => ({type: "object", properties: Object.fromEntries(Array.from({length: n}, (_, i) => [`p${i}`, {type: "integer"}]))})
    },
    "required-properties": {
        sizes: [100, 300, 1000, 3000, 10_000],
        schema: (n) => {
            const names = Array.from({length: n}, (_, i) => `p${i}`);
            return {type: "object", properties: Object.fromEntries(names.map((name) => [name, {type: "integer"}])), required: names};
        }
    },
    enum: {
        sizes: [100, 300, 1000, 3000, 10_000, 30_000],
        schema: (n) => ({enum: Array.from({length: n}, (_, i) => `value-${i}`)})
    },
    "anyOf-objects": {
        sizes: [30, 100, 300, 1000, 3000, 10_000],
        schema: (n) => ({
            anyOf: Array.from({length: n}, (_, i) => ({
                type: "object",
                properties: {[`k${i}`]: {type: "string"}},
                required: [`k${i}`]
            }))
        })
    },
    "pattern-nested-repetition": {
        // ^((a{0,n}){0,n}){0,n}$: three nested bounded repetitions, product n^3.
        sizes: [2, 3, 4, 5, 6, 8, 10, 12, 16],
        schema: (n) => ({type: "string", pattern: `^((a{0,${n}}){0,${n}}){0,${n}}$`})
    },
    "pattern-single-repetition": {
        sizes: [100, 500, 1000, 2000],
        schema: (n) => ({type: "string", pattern: `^(ab){0,${n}}$`})
    },
    "pattern-two-level-repetition": {
        // ^((a{0,n}){0,n})$: product n^2.
        sizes: [5, 10, 20, 30, 40, 60, 80],
        schema: (n) => ({type: "string", pattern: `^((a{0,${n}}){0,${n}})$`})
    },
    "array-max-items-nesting": {
        // Arrays of arrays, each maxItems 50, nested n deep.
        sizes: [1, 2, 3, 4, 6, 8],
        schema: (n) => {
            let node: unknown = {type: "integer"};
            for (let level = 0; level < n; level++) node = {type: "array", items: node, maxItems: 50};
            return node;
        }
    },
    "string-max-length-sum": {
        // n required string properties of maxLength 2000 each (their repetition bounds add up).
        sizes: [1, 5, 10, 25, 50, 100],
        schema: (n) => {
            const names = Array.from({length: n}, (_, i) => `s${i}`);
            return {
                type: "object",
                properties: Object.fromEntries(names.map((name) => [name, {type: "string", maxLength: 2000}])),
                required: names
            };
        }
    }
};

/** Child mode: one measurement, printed as JSON. */
async function measureOne(family: string, size: number): Promise<void> {
    const {nativeAddon} = await import("../src/backend/nativeAddon.js");
    const addon = nativeAddon();
    const model = new addon.NativeModel(values.model!);
    const schemaText = JSON.stringify(families[family]!.schema(size));
    let start = performance.now();
    const grammar = addon.jsonSchemaToGrammar(schemaText);
    const convertMs = performance.now() - start;
    start = performance.now();
    const handle = new addon.NativeGrammar(model, grammar);
    const constructMs = performance.now() - start;
    // The first steps of a generation: mask a whole row, accept the lowest allowed id, four times.
    start = performance.now();
    const row = new Float64Array(handle.vocabularySize);
    for (let step = 0; step < 4; step++) {
        row.fill(0);
        await handle.mask(row);
        const next = row.findIndex((logit) => logit === 0);
        if (next < 0) break;
        handle.accept(next);
    }
    const stepsMs = performance.now() - start;
    handle.dispose();
    const rss = process.memoryUsage().rss;
    process.stdout.write(
        JSON.stringify({
            schemaBytes: schemaText.length,
            grammarBytes: grammar.length,
            convertMs,
            constructMs,
            stepsMs,
            rssMiB: rss / 2 ** 20
        }) + "\n"
    );
}

function runFamily(family: string): void {
    const stopMs = Number(values["stop-ms"]);
    const killMs = Number(values["kill-ms"]);
    process.stdout.write(`\n${family}\n  size | schema bytes | grammar bytes | convert ms | construct ms | 4 steps ms | RSS MiB\n`);
    for (const size of families[family]!.sizes) {
        const child = spawnSync(
            process.execPath,
            [...process.execArgv, import.meta.filename, "--measure", family, "--size", String(size)],
            {
                timeout: killMs,
                encoding: "utf8",
                env: {...process.env, GGML_LOG_LEVEL: "error"}
            }
        );
        if (child.error !== undefined || child.status !== 0) {
            const why = child.signal === "SIGTERM" ? `> ${killMs} ms (killed)` : `failed: ${(child.stderr || "").trim().split("\n").pop()}`;
            process.stdout.write(`  ${size} | ${why}\n`);
            return;
        }
        const row = JSON.parse(child.stdout.trim().split("\n").pop()!) as Record<string, number>;
        process.stdout.write(
            `  ${size} | ${row.schemaBytes} | ${row.grammarBytes} | ${row.convertMs!.toFixed(1)} | ${row.constructMs!.toFixed(1)} | ${row.stepsMs!.toFixed(1)} | ${row.rssMiB!.toFixed(0)}\n`
        );
        if (row.convertMs! + row.constructMs! + row.stepsMs! > stopMs) return;
    }
}

if (values.measure !== undefined) await measureOne(values.measure, Number(values.size));
else for (const family of values.family !== undefined ? [values.family] : Object.keys(families)) runFamily(family);
