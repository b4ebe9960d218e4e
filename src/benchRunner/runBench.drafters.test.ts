import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {loadModelBackend} from "../backend/loadModelBackend.js";
import {parseDrafterSpec} from "../engine/drafters/parseDrafterSpec.js";
import {writeRandomLlamaPair} from "../gguf/randomLlamaModel.js";
import {type BenchRow, runBench} from "./runBench.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

let directory: string;
let target: ModelBackend;
let draft: ModelBackend;
let rows: BenchRow[];

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-bench-drafters-"));
    const pair = await writeRandomLlamaPair({directory, seed: 5});
    target = await loadModelBackend(pair.targetPath, {threads: 1});
    draft = await loadModelBackend(pair.draftPath, {threads: 1});
    rows = await runBench({
        target,
        draft,
        drafters: ["model", "ngram:1:8", "suffix:1", "ngram:1:8+model"].map((spec) => parseDrafterSpec(spec)),
        // The same prompt twice: the suffix drafter has the first output to draft the second from.
        prompts: ["The quick brown fox", "The quick brown fox"],
        gammas: [3],
        maxTokens: 24,
        seed: 0,
        repeats: 2,
        policies: [{kind: "strict"}],
        sampling: {temperature: 0, topK: 0, topP: 1, minP: 0}
    });
});
afterAll(async () => {
    await draft.dispose();
    await target.dispose();
    await rm(directory, {recursive: true, force: true});
});

describe("runBench with several drafters", () => {
    it("runs every drafter side by side, each exactly as target-only at temperature 0", () => {
        expect(rows.map((row) => row.label)).toEqual([
            "target-only",
            "strict γ=3",
            "ngram:1:8 strict γ=3",
            "suffix:1:1:24:100000 strict γ=3",
            "ngram:1:8+model strict γ=3"
        ]);
        expect(rows.map((row) => row.drafter)).toEqual([null, "model", "ngram:1:8", "suffix:1:1:24:100000", "ngram:1:8+model"]);
        for (const row of rows) expect(row.exactMatchRate).toBe(1);
        const suffix = rows[3].telemetry!.drafters["suffix:1:1:24:100000"];
        expect(suffix.acceptedTokens).toBeGreaterThan(0);
        // Only α̂ needs a draft model; the other rows' limit is target-only's time per token × tokens ÷ their model time.
        expect(rows[1].inferredAlpha).not.toBeNull();
        const baselineTelemetry = rows[0].telemetry!;
        const baselinePerToken =
            (baselineTelemetry.timeMilliseconds.total - baselineTelemetry.timeMilliseconds.prompt) / baselineTelemetry.emittedTokens;
        for (const row of rows.slice(2)) {
            expect(row.inferredAlpha).toBeNull();
            expect(row.analyticSpeedup).toBeCloseTo(
                (baselinePerToken * row.telemetry!.emittedTokens) / row.telemetry!.modelMilliseconds,
                9
            );
        }
    });
});
