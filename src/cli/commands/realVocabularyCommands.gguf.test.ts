import {mkdtemp, readFile, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {GgufReader} from "../../gguf/GgufReader.js";
import {ExitCode} from "../exitCodes.js";
import {runCliCaptured} from "../testing/runCliCaptured.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/**
 * Every command end to end on a real-vocabulary fixture written by `specgate fixtures --tokenizer
 * qwen3 --pad-vocabulary 128` (Qwen3's 151,669-token vocabulary, merges and ChatML template; the
 * target 128 padding rows longer than the draft; random weights, tiny shapes, a 4,096-token
 * context). The battery mixes English, Japanese with emoji, Devanagari, combining marks and a chat
 * item, plus one item whose prompt is longer than the context: every command finishes and says
 * what it did with it (skipped, named and counted; never cut), never stopping halfway.
 */
let directory: string;
let target: string;
let draft: string;
let battery: string;
let prompts: string;
const longText = "東京 hello 😀 नमस्ते ".repeat(900);

const cli = runCliCaptured;

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-real-vocabulary-"));
    const fixtures = await cli(
        "fixtures",
        "--out",
        directory,
        "--tokenizer",
        "qwen3",
        "--pad-vocabulary",
        "128",
        "--target-shape",
        "32,1,2,64",
        "--draft-shape",
        "16,1,1,32",
        "--context",
        "4096"
    );
    expect(fixtures.code, fixtures.stderr).toBe(0);
    target = join(directory, "target.gguf");
    draft = join(directory, "draft.gguf");
    const items = [
        {id: "en", task: "math", language: "en", prompt: "Question: 2 + 3 = ?\nAnswer:", reference: "5"},
        {id: "ja", task: "math", language: "ja", prompt: "質問: 東京 😀 4 + 4 は？\n答え:", reference: "8"},
        {id: "hi", task: "qa", language: "hi", prompt: "नमस्ते दुनिया. फ़्रांस की राजधानी?", reference: "पेरिस"},
        {id: "long", task: "qa", language: "en", prompt: `${longText}Answer:`, reference: "x"},
        {id: "marks", task: "math", language: "en", prompt: "Cafe\u0301 ñ Z\u0351: 1 + 1 =", reference: "2"},
        {
            id: "chat",
            task: "qa",
            language: "ja",
            messages: [
                {role: "system", content: "Answer briefly."},
                {role: "user", content: "日本の首都は？"}
            ],
            reference: "東京"
        }
    ];
    battery = join(directory, "battery.jsonl");
    await writeFile(battery, items.map((item) => JSON.stringify(item)).join("\n"));
    prompts = join(directory, "prompts.jsonl");
    await writeFile(
        prompts,
        items
            .filter((item) => item.prompt !== undefined)
            .map((item) => JSON.stringify({prompt: item.prompt}))
            .join("\n")
    );
}, 60_000);

afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

describe("every command on the qwen3 fixture (real vocabulary, padded target)", () => {
    it("fixtures writes Qwen3's vocabulary, the padding and the context", () => {
        const header = (path: string) => GgufReader.readHeader(path).metadata;
        expect(header(target).get("tokenizer.ggml.pre")?.value).toBe("qwen2");
        expect(header(target).get("llama.context_length")?.value).toBe(4096);
        const size = (path: string) =>
            (header(path).get("tokenizer.ggml.tokens")!.value as unknown as {items: readonly unknown[]}).items.length;
        expect([size(target), size(draft)]).toEqual([151_669 + 128, 151_669]);
    });

    it("generate: strict speculative at T = 0 prints what the target alone prints; a prompt beyond the context is a clear error", async () => {
        const prompt = "東京は 😀 नमस्ते e\u0301";
        const run = async (...extra: string[]) => {
            const json = join(directory, `generate-${extra.length}.json`);
            const outcome = await cli(
                "generate",
                "--target",
                target,
                ...extra,
                "--temperature",
                "0",
                "--max-tokens",
                "24",
                "--json",
                json,
                prompt
            );
            expect(outcome.code, outcome.stderr).toBe(0);
            return JSON.parse(await readFile(json, "utf8")) as {text: string; tokens: number[]};
        };
        const alone = await run();
        const speculative = await run("--draft", draft, "--policy", "strict", "--gamma", "4");
        expect(alone.tokens).toHaveLength(24);
        expect(speculative.tokens).toEqual(alone.tokens);
        expect(speculative.text).toBe(alone.text);
        const tooLong = await cli("generate", "--target", target, "--max-tokens", "4", longText);
        expect(tooLong).toMatchObject({
            code: ExitCode.badInput,
            stderr: expect.stringMatching(/^specgate generate: prompt: has \d+ tokens; the context holds 4096\n$/)
        });
    }, 30_000);

    it("bench: rows for target-only and strict, exact match 100%; the long prompt is skipped and named", async () => {
        const outcome = await cli(
            "bench",
            "--target",
            target,
            "--draft",
            draft,
            "--prompts",
            prompts,
            "--policies",
            "strict,fuzzy:js:0.4",
            "--gamma",
            "2",
            "--max-tokens",
            "8",
            "--temperature",
            "0",
            "--no-predictor",
            "--repeats",
            "1",
            "--json",
            "-"
        );
        expect(outcome.code, outcome.stderr).toBe(0);
        expect(outcome.stderr).toMatch(
            /skipped 1 of 5 prompt\(s\) that do not fit the 4096-token context with --max-tokens 8: #4 \(\d+ tokens\)/
        );
        const report = JSON.parse(outcome.stdout) as {
            prompts: number;
            skippedPrompts: unknown[];
            rows: {policy: string | null; tokens: number; exactMatchRate: number}[];
        };
        expect(report.prompts).toBe(4);
        expect(report.skippedPrompts).toHaveLength(1);
        expect(report.rows.find((row) => row.policy === null)!.tokens).toBe(4 * 8);
        expect(report.rows.find((row) => row.policy === "strict")!.exactMatchRate).toBe(1);
    }, 30_000);

    it("canary: target-only against strict passes on the compared prompts and reports the skipped one", async () => {
        const json = join(directory, "canary.json");
        const outcome = await cli(
            "canary",
            "--prompts",
            battery,
            "--a",
            `embedded:target=${target}`,
            "--b",
            `embedded:target=${target},draft=${draft},policy=strict,gamma=3`,
            "--max-tokens",
            "8",
            // 5 prompts compared can rule out a mismatch rate of 50% (95% upper bound 43%), not 1.5%.
            "--max-mismatch",
            "0.5",
            "--json",
            json,
            "--report",
            join(directory, "canary.md")
        );
        expect(outcome.code, outcome.stderr).toBe(0);
        expect(outcome.stdout).toMatch(/^PASS: 5\/5 exact matches.*, 1 prompt\(s\) skipped: too long for the context with --max-tokens\n$/);
        const result = JSON.parse(await readFile(json, "utf8")) as {
            compared: number;
            skipped: {id: string; path: string}[];
            errors: unknown[];
        };
        expect(result.skipped).toEqual([
            {id: "long", path: "a", message: expect.stringMatching(/with 8 generated tokens that is more than the 4096-token context/)},
            {id: "long", path: "b", message: expect.stringMatching(/with 8 generated tokens that is more than the 4096-token context/)}
        ]);
        expect(result.errors).toEqual([]);
    }, 30_000);

    it("tais run: every pair generated but the long one, which is skipped and listed; target-only and strict are byte-identical", async () => {
        const outcome = await cli(
            "tais",
            "run",
            "--battery",
            battery,
            "--a",
            `embedded:target=${target}`,
            "--b",
            `embedded:target=${target},draft=${draft},policy=strict,gamma=3`,
            "--max-tokens",
            "8",
            "--format",
            "json"
        );
        expect(outcome.code).toBe(ExitCode.insufficientData);
        expect(outcome.stderr).toMatch(
            /skipped 1 of 6 sample\(s\) whose prompt does not fit an arm's context with --max-tokens 8 \(first: long, target_only/
        );
        const card = JSON.parse(outcome.stdout) as {tais_run: {samples: number; skipped: {item: string}[]; cells: {pairs: number}[]}};
        expect(card.tais_run.samples).toBe(5);
        expect(card.tais_run.skipped.map((sample) => sample.item)).toEqual(["long"]);
        expect(outcome.stdout).toContain('"byte_identity": "5 / 5 paired prompts"');
    }, 30_000);

    it("sweep: baselines and configurations over the battery, the long prompt skipped, named and counted", async () => {
        const outcome = await cli(
            "sweep",
            "--target",
            target,
            "--draft",
            draft,
            "--battery",
            battery,
            "--policies",
            "fuzzy:js:0.4",
            "--gamma",
            "2",
            "--max-tokens",
            "8",
            "--json",
            "-"
        );
        expect(outcome.code, outcome.stderr).toBe(0);
        expect(outcome.stderr).toMatch(
            /skipped 1 of 6 item\(s\) whose prompt does not fit the 4096-token context with --max-tokens 8 \(raise --context-size or lower --max-tokens\): long\n/
        );
        const result = JSON.parse(outcome.stdout) as {
            points: {label: string; outcomes: unknown[]}[];
            context: {size: number; total: number; skipped: string[]};
        };
        expect(result.context).toEqual({size: 4096, maxTokens: 8, total: 6, skipped: ["long"]});
        expect(result.points.map((point) => point.label)).toEqual(
            expect.arrayContaining(["target-only", "draft-only", "strict γ=2", "fuzzy:js:0.4 γ=2"])
        );
        for (const point of result.points) expect(point.outcomes).toHaveLength(5);
    }, 120_000);

    it("calibrate: a threshold chosen or the budget reported, with the skipped prompt named", async () => {
        const outcome = await cli(
            "calibrate",
            "--target",
            target,
            "--draft",
            draft,
            "--battery",
            battery,
            "--max-accuracy-drop",
            "5",
            "--gamma",
            "2",
            "--thresholds",
            "0.2,0.6",
            "--max-tokens",
            "8",
            "--json",
            "-"
        );
        expect([ExitCode.success, ExitCode.verdictFailed], outcome.stderr).toContain(outcome.code);
        expect(outcome.stderr).toMatch(/skipped 1 of 6 item\(s\) whose prompt does not fit .*: long\n/);
        const result = JSON.parse(outcome.stdout) as {candidates: unknown[]};
        expect(result.candidates.length).toBeGreaterThan(0);
    }, 120_000);

    it("ocm build: a correction memory over the real vocabulary; the long prompt is skipped and named", async () => {
        const out = join(directory, "memory.json");
        const outcome = await cli(
            "ocm",
            "build",
            "--target",
            target,
            "--draft",
            draft,
            "--corpus",
            prompts,
            "--out",
            out,
            "--max-tokens",
            "12"
        );
        expect(outcome.code, outcome.stderr).toBe(0);
        expect(outcome.stderr).toMatch(
            /skipped 1 of 5 prompt\(s\) that do not fit the 4096-token context with --max-tokens 12: #4 \(\d+ tokens\)/
        );
        expect(outcome.stdout).toMatch(/on 4 prompts\n$/);
        const memory = JSON.parse(await readFile(out, "utf8")) as {vocabularySize: number; entries: unknown[]};
        expect(memory.vocabularySize).toBe(151_669 + 128);
        expect(memory.entries.length).toBeGreaterThan(0);
    }, 120_000);

    it("fairness analyze: groups by language over the shared ids, the long prompt skipped and counted", async () => {
        const outcome = await cli(
            "fairness",
            "analyze",
            "--target",
            target,
            "--draft",
            draft,
            "--battery",
            battery,
            "--max-tokens",
            "8",
            "--resamples",
            "100",
            "--json",
            "-"
        );
        expect(outcome.code, outcome.stderr).toBe(0);
        const analysis = JSON.parse(outcome.stdout) as {
            by: string;
            groups: {name: string}[];
            items: {id: string}[];
            context: {size: number; skipped: {id: string}[]};
        };
        expect(analysis.by).toBe("language");
        expect(analysis.groups.map((group) => group.name).sort()).toEqual(["en", "hi", "ja"]);
        expect(analysis.context.skipped.map((item) => item.id)).toEqual(["long"]);
        expect(analysis.items.map((item) => item.id)).not.toContain("long");
        expect(outcome.stderr).toMatch(/skipped 1 of 6 item\(s\) whose prompt does not fit the 4096-token context with --max-tokens 8/);
    }, 30_000);
});
