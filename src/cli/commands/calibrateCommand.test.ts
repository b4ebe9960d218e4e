import {mkdtemp, readFile, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {skewedBigramPair} from "../../fairness/testing/skewedBigramPair.js";
import {targetReferenceBattery} from "../../tune/testing/targetReferenceBattery.js";
import {BUDGET_NOT_MET_EXIT_CODE, runCalibrateCommand} from "./calibrateCommand.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";
import {runCliCaptured} from "../testing/runCliCaptured.js";
import type {DraftSampling} from "../draftSamplingOption.js";

vi.setConfig(modelTestTimeouts);

let directory: string;
let battery: string;
const pair = skewedBigramPair(5);
const openPair = async (path: string) => (path === "target.gguf" ? pair.target : pair.draft);
const base = {target: "target.gguf", draft: "draft.gguf", maxTokens: "4", gamma: "2,3"};

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-calibrate-"));
    battery = join(directory, "battery.jsonl");
    const items = await targetReferenceBattery(pair.target);
    await writeFile(battery, items.map(({id, task, prompt, reference}) => JSON.stringify({id, task, prompt, reference})).join("\n") + "\n");
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

describe("specgate calibrate", () => {
    it("selects a setting, reports it on the evaluation split and writes JSON", async () => {
        const json = join(directory, "calibration.json");
        const report = join(directory, "calibration.md");
        const phases: string[] = [];
        const outcome = await runCalibrateCommand(
            {...base, battery, maxAccuracyDrop: "50", thresholds: "0.1,0.6", json, report},
            openPair,
            {phase: (phase) => phases.push(phase)}
        );
        expect(outcome.stderr).toBe("");
        expect(outcome.exitCode).toBe(0);
        expect(outcome.stdout).toMatch(
            /^selected --policy 'fuzzy:js:0\.6' --gamma [23]: evaluation accuracy \d+\.\d%, drop -?\d+\.\d pt \((within|OVER) budget\)/
        );
        expect(phases).toEqual(["calibration", "evaluation"]);
        expect(await readFile(report, "utf8")).toMatch(/## Verdict\n\n(Note: .*\n\n)?\*\*Selected: fuzzy:js:0\.6 with γ = [23]\*\*/);
        const written = JSON.parse(await readFile(json, "utf8")) as {
            calibrationItems: string[];
            evaluationItems: string[];
            candidates: unknown[];
            selected: {threshold: number};
        };
        expect(written.calibrationItems.length + written.evaluationItems.length).toBe(16);
        expect(written.candidates).toHaveLength(4);
        expect(written.selected.threshold).toBe(0.6);
    });

    it("skips and counts items whose prompt does not fit the 512-token context with --max-tokens; more than half skipped is exit 3", async () => {
        const items = await targetReferenceBattery(pair.target);
        const long = join(directory, "long.jsonl");
        await writeFile(
            long,
            items
                .map(({id, task, prompt, reference}, index) =>
                    JSON.stringify({id, task, prompt: index < 9 ? "fig ".repeat(150) : prompt, reference})
                )
                .join("\n") + "\n"
        );
        const json = join(directory, "long.json");
        const outcome = await runCalibrateCommand({...base, battery: long, maxAccuracyDrop: "50", thresholds: "0.6", json}, openPair);
        expect(outcome.exitCode).toBe(3);
        expect(outcome.stderr).toMatch(
            /^specgate calibrate: skipped 9 of 16 item\(s\) whose prompt does not fit the 512-token context with --max-tokens 4/
        );
        expect(outcome.stderr).toMatch(/INSUFFICIENT DATA: 9 of 16 item\(s\) were skipped \(more than half\)/);
        const written = JSON.parse(await readFile(json, "utf8")) as {
            calibrationItems: string[];
            evaluationItems: string[];
            context: {skipped: string[]};
        };
        expect(written.context.skipped).toEqual(items.slice(0, 9).map((item) => item.id));
        expect(written.calibrationItems.length + written.evaluationItems.length).toBe(7);
    });

    it(`exits ${BUDGET_NOT_MET_EXIT_CODE} and says so when no threshold keeps accuracy within the budget`, async () => {
        const outcome = await runCalibrateCommand({...base, battery, maxAccuracyDrop: "0", thresholds: "0.6,0.69"}, openPair);
        expect(outcome.exitCode).toBe(BUDGET_NOT_MET_EXIT_CODE);
        expect(outcome.stdout).toContain("**No fuzzy setting meets the budget.**");
        expect(outcome.stdout).toContain("Keep strict SD (lossless)");
    });

    it(`exits ${BUDGET_NOT_MET_EXIT_CODE} when the settings within the budget accept no more than strict SD`, async () => {
        const outcome = await runCalibrateCommand({...base, battery, maxAccuracyDrop: "0", thresholds: "0.05,0.1"}, openPair);
        expect(outcome.exitCode).toBe(BUDGET_NOT_MET_EXIT_CODE);
        expect(outcome.stdout).toContain("**No fuzzy setting beats strict SD within the budget.**");
    });

    it("drafts greedily with --draft-sampling greedy and records the mode", async () => {
        const run = async (draftSampling: DraftSampling | undefined) => {
            const json = join(directory, `calibration-${draftSampling ?? "default"}.json`);
            await runCalibrateCommand(
                {...base, battery, maxAccuracyDrop: "50", thresholds: "0.6", temperature: "1", draftSampling, json},
                openPair
            );
            return JSON.parse(await readFile(json, "utf8")) as {draftSampling: string; strict: Array<{acceptedTokens: number}>};
        };
        const sampled = await run(undefined);
        const greedy = await run("greedy");
        expect([sampled.draftSampling, greedy.draftSampling]).toEqual(["sample", "greedy"]);
        expect(greedy.strict.map((row) => row.acceptedTokens)).not.toEqual(sampled.strict.map((row) => row.acceptedTokens));
    });

    it("runs the Fuzzy SD paper's procedure with --procedure fsd-paper and refuses the grid's flags there", async () => {
        const json = join(directory, "fsd-paper.json");
        const report = join(directory, "fsd-paper.md");
        const outcome = await runCalibrateCommand(
            {target: "target.gguf", draft: "draft.gguf", battery, maxTokens: "4", procedure: "fsd-paper", temperature: "0", json, report},
            openPair
        );
        expect(outcome.stderr).toBe("");
        expect(outcome.exitCode).toBe(0);
        expect(outcome.stdout).toMatch(
            /^the Fuzzy SD paper's procedure selected --policy 'fuzzy:js-fsd:[\d.]+' --gamma (5|10|15|20): evaluation accuracy/
        );
        const written = JSON.parse(await readFile(json, "utf8")) as {
            procedure: string;
            draftSampling: string;
            lengths: unknown[];
            steps: Array<{trials: unknown[]}>;
        };
        expect(written).toMatchObject({procedure: "fsd-paper", draftSampling: "greedy"});
        expect(written.lengths).toHaveLength(4);
        expect(written.steps.every((step) => step.trials.length === 3)).toBe(true);
        expect(await readFile(report, "utf8")).toMatch(/^# FSD calibration: the Fuzzy SD paper's procedure/);
        const bad = (extra: Record<string, string>) =>
            runCalibrateCommand({target: "target.gguf", draft: "draft.gguf", battery, procedure: "fsd-paper", ...extra}, openPair);
        expect((await bad({gamma: "4"})).stderr).toMatch(/--gamma: does not apply to --procedure fsd-paper/);
        expect((await bad({draftSampling: "sample"})).stderr).toMatch(/--draft-sampling: must be greedy with --procedure fsd-paper/);
    });

    it("exits 2 on bad input", async () => {
        expect((await runCalibrateCommand({...base, battery}, openPair)).stderr).toMatch(/--max-accuracy-drop: is required/);
        expect((await runCalibrateCommand({...base, battery, maxAccuracyDrop: "1", policy: "strict"}, openPair)).stderr).toMatch(
            /--policy: must be fuzzy/
        );
        expect((await runCalibrateCommand({...base, battery, maxAccuracyDrop: "1", calibrationShare: "1.5"}, openPair)).stderr).toMatch(
            /--calibration-share: must lie strictly between 0 and 1/
        );
        expect((await runCalibrateCommand({...base, battery, maxAccuracyDrop: "-1"}, openPair)).exitCode).toBe(2);
    });

    it("refuses a --procedure, --speed or --draft-sampling outside their choices, naming the flag and the choices", async () => {
        expect(await runCliCaptured("calibrate", "--procedure", "paper")).toMatchObject({
            code: 2,
            stderr: expect.stringContaining(
                "'--procedure <grid|fsd-paper>' argument 'paper' is invalid. Allowed choices are grid, fsd-paper."
            )
        });
        expect(await runCliCaptured("calibrate", "--speed", "fast")).toMatchObject({
            code: 2,
            stderr: expect.stringContaining(
                "'--speed <measured|one-step>' argument 'fast' is invalid. Allowed choices are measured, one-step."
            )
        });
        expect(await runCliCaptured("calibrate", "--draft-sampling", "beam")).toMatchObject({
            code: 2,
            stderr: expect.stringContaining("'--draft-sampling <mode>' argument 'beam' is invalid. Allowed choices are sample, greedy.")
        });
    });
});
