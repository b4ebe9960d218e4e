import {mkdtemp, readFile, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {skewedBigramPair} from "../../fairness/testing/skewedBigramPair.js";
import {targetReferenceBattery} from "../../tune/testing/targetReferenceBattery.js";
import {runCalibrateCommand} from "./calibrateCommand.js";
import {runSweepCommand} from "./sweepCommand.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

let directory: string;
let battery: string;
const pair = skewedBigramPair(5);
const openPair = async (path: string) => (path === "target.gguf" ? pair.target : pair.draft);

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-tune-drafter-"));
    battery = join(directory, "battery.jsonl");
    const items = await targetReferenceBattery(pair.target);
    await writeFile(battery, items.map(({id, task, prompt, reference}) => JSON.stringify({id, task, prompt, reference})).join("\n") + "\n");
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

describe("--drafter on sweep and calibrate", () => {
    it("sweep drafts with the named drafter and records it; the draft model still gives draft-only", async () => {
        const run = async (drafter: string | undefined) => {
            const json = join(directory, `sweep-${drafter ?? "default"}.json`);
            const outcome = await runSweepCommand(
                {target: "target.gguf", draft: "draft.gguf", drafter, battery, policies: "strict", gamma: "3", maxTokens: "8", json},
                openPair
            );
            expect(outcome.exitCode).toBe(0);
            return JSON.parse(await readFile(json, "utf8")) as {
                settings: {drafter: string};
                points: Array<{label: string; accuracy: number; acceptanceRate: number; draftTokens?: number}>;
            };
        };
        const model = await run(undefined);
        const ngram = await run("ngram:1:2");
        expect(model.settings.drafter).toBe("model");
        expect(ngram.settings.drafter).toBe("ngram:1:2");
        const strict = (result: typeof model) => result.points.find((point) => point.label.startsWith("strict"))!;
        // Strict at temperature 0 is exact whatever drafts: the same accuracy, different acceptance.
        expect(strict(ngram).accuracy).toBe(strict(model).accuracy);
        expect(strict(ngram).acceptanceRate).not.toBe(strict(model).acceptanceRate);
    });

    it("a bad spec is a usage error naming --drafter", async () => {
        const sweep = await runSweepCommand(
            {target: "target.gguf", draft: "draft.gguf", drafter: "ngram:3:1", battery, policies: "strict"},
            openPair
        );
        expect(sweep.exitCode).toBe(2);
        expect(sweep.stderr).toContain("--drafter: ngram MAX (1) is below MIN (3)");
        const calibrate = await runCalibrateCommand(
            {target: "target.gguf", draft: "draft.gguf", drafter: "beam", battery, maxAccuracyDrop: "5", thresholds: "0.1"},
            openPair
        );
        expect(calibrate.exitCode).toBe(2);
        expect(calibrate.stderr).toContain('--drafter: unknown drafter "beam"');
    });
});
