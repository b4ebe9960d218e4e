import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {loadModelBackend} from "../backend/loadModelBackend.js";
import {writeRandomLlamaPair} from "../gguf/randomLlamaModel.js";
import {type BenchRow, formatBenchHeader, formatBenchTable, runBench} from "./runBench.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

let directory: string;
let target: ModelBackend;
let draft: ModelBackend;
let rows: BenchRow[];
const rounds = 3;

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-bench-"));
    const pair = await writeRandomLlamaPair({directory, seed: 5});
    target = await loadModelBackend(pair.targetPath, {threads: 1});
    draft = await loadModelBackend(pair.draftPath, {threads: 1});
    rows = await runBench({
        target,
        draft,
        prompts: ["The quick brown fox", "Hello"],
        gammas: [3],
        maxTokens: 12,
        seed: 0,
        repeats: rounds,
        policies: [{kind: "strict"}, {kind: "fuzzy", threshold: 1000, divergence: "js", distribution: "raw"}],
        sampling: {temperature: 0, topK: 0, topP: 1, minP: 0}
    });
});
afterAll(async () => {
    await draft.dispose();
    await target.dispose();
    await rm(directory, {recursive: true, force: true});
});

describe("runBench", () => {
    it("measures γ=auto:MAX rows beside the fixed ones, with their chosen lengths and no analytic limit", async () => {
        const autoRows = await runBench({
            target,
            draft,
            prompts: ["The quick brown fox"],
            gammas: [],
            autoGammas: [3],
            maxTokens: 12,
            seed: 0,
            policies: [{kind: "strict"}],
            sampling: {temperature: 0, topK: 0, topP: 1, minP: 0}
        });
        expect(autoRows.map((row) => row.label)).toEqual(["target-only", "strict γ=auto:3"]);
        const auto = autoRows[1];
        expect(auto).toMatchObject({gamma: 3, draftLength: "auto", analyticSpeedup: null, exactMatchRate: 1});
        expect(auto.telemetry!.draftLengths.counts.length).toBeLessThanOrEqual(4);
        expect(auto.telemetry!.draftLengths.counts.reduce((sum, count) => sum + count, 0)).toBeGreaterThan(0);
    });

    it("reports every speed-up as a median over rounds with its range, and the rounds' tokens in the totals", () => {
        expect(rows.map((row) => row.label)).toEqual(["target-only", "strict γ=3", "fuzzy:js:1000 γ=3"]);
        expect(rows[0]).toMatchObject({speedup: 1, speedupRange: {min: 1, max: 1}});
        for (const row of rows.slice(1)) {
            expect(row.speedupRange.min).toBeLessThanOrEqual(row.speedup);
            expect(row.speedup).toBeLessThanOrEqual(row.speedupRange.max);
            expect(row.efficiencyRange!.min).toBeCloseTo(row.speedupRange.min / row.analyticSpeedup!, 12);
            expect(row.efficiency).toBeCloseTo(row.speedup / row.analyticSpeedup!, 12);
        }
        // Every round ran every prompt: at temperature 0 target-only emits the same tokens each round.
        expect(rows[0].tokens % rounds).toBe(0);
        expect(rows[0].telemetry!.steps).toBe(rows[0].tokens);
    });

    it("flags the rows whose output differs from target-only, and says what the columns mean", () => {
        expect(rows[1].exactMatchRate).toBe(1);
        // A fuzzy threshold above any divergence accepts every draft: the draft's text, not the target's.
        expect(rows[2].exactMatchRate).toBeLessThan(1);
        const table = formatBenchTable(rows);
        expect(table).toMatch(/\| strict γ=3 \|/);
        expect(table).toMatch(/\| ⚠ fuzzy:js:1000 γ=3 \|/);
        expect(table).toMatch(/\d\.\d\d× \[\d\.\d\d–\d\.\d\d\] \|/);
        expect(table).toMatch(/^speed-up: tokens\/s ÷ target-only's in the same round; the median over rounds/m);
        expect(table).toMatch(/⚠ marks rows whose output differs/);
        expect(formatBenchTable(rows.slice(0, 2))).not.toMatch(/⚠/);
    });

    it("the header names the pair, the prompts, the token budget, the rounds and the threads", () => {
        const setup = {
            target: "t.gguf",
            draft: "d.gguf",
            prompts: 8,
            promptSource: "p.jsonl",
            maxTokens: 48,
            temperature: 0,
            rounds: 3,
            threads: 1
        };
        const header = formatBenchHeader(setup);
        expect(header).toBe(
            "specgate bench: target t.gguf, draft d.gguf\n" +
                "8 prompts (p.jsonl) × up to 48 tokens, temperature 0, 3 rounds (each runs every row once, in turn), 1 thread per model\n\n"
        );
        // Prompts the context rule skipped are counted beside those that ran.
        expect(formatBenchHeader({...setup, skippedPrompts: 2}).split("\n")[1]).toBe(
            "8 prompts (p.jsonl; 2 more skipped: too long for the context) × up to 48 tokens, temperature 0, 3 rounds (each runs every row once, in turn), 1 thread per model"
        );
    });
});
