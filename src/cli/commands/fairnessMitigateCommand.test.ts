import {createHash} from "node:crypto";
import {mkdtemp, readFile, rm, stat, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {batteryFixtureDirectory} from "../../batteries/testing/batteryFixtureDirectory.js";
import {type RandomLlamaPair, writeRandomLlamaPair} from "../../gguf/randomLlamaModel.js";
import {runFairnessMitigateCommand} from "./fairnessMitigateCommand.js";
import {runCliCaptured} from "../testing/runCliCaptured.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

let directory: string;
let pair: RandomLlamaPair;

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-mitigate-cli-"));
    pair = await writeRandomLlamaPair({directory, seed: 31});
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

describe("specgate fairness mitigate", () => {
    it("runs s-CDF and re-balancing from one start, writes both drafters and a before/after report", async () => {
        const out = join(directory, "mitigated.gguf");
        const json = join(directory, "report.json");
        const targetHash = createHash("sha256")
            .update(await readFile(pair.targetPath))
            .digest("hex");
        const progress: string[] = [];
        const outcome = await runFairnessMitigateCommand({
            target: pair.targetPath,
            draft: pair.draftPath,
            battery: "mgsm:en@2,mgsm:ja@2",
            dataDirectory: batteryFixtureDirectory,
            out,
            method: "both",
            steps: "3",
            batchPerTask: "2",
            lr: "0.01",
            maxTokens: "4",
            resamples: "20",
            json,
            onProgress: (line) => progress.push(line)
        });
        expect(outcome.stderr).toBe("");
        expect(outcome.exitCode).toBe(0);
        expect(outcome.stdout).toMatch(/^# Speed-up fairness mitigation: s-CDF and re-balancing/);
        expect(outcome.stdout).toContain("**In-sample evaluation**");
        expect(outcome.stdout).toContain(`Target file SHA-256 before \`${targetHash}\`, after \`${targetHash}\` (unchanged)`);
        expect(outcome.stdout).toMatch(/\| target-only outputs identical \| – \| yes \| yes \| yes \| – \|/);
        expect(outcome.stdout).toMatch(/\| en \| \d\.\d{3} \| \d\.\d{3} \([+−]\d\.\d pt\) \|/);
        expect((await stat(out)).size).toBeGreaterThan(0);
        expect((await stat(join(directory, "mitigated.rebalance.gguf"))).size).toBeGreaterThan(0);
        const report = JSON.parse(await readFile(json, "utf8")) as {
            inSample: boolean;
            targetSha256Before: string;
            targetSha256After: string;
            runs: Array<{method: string; training: {steps: Array<{weights: number[]}>}; comparison: {targetOutputsIdentical: boolean}}>;
        };
        expect(report.inSample).toBe(true);
        expect(report.targetSha256After).toBe(report.targetSha256Before);
        expect(report.runs.map((run) => run.method)).toEqual(["scdf", "rebalance"]);
        expect(report.runs.every((run) => run.comparison.targetOutputsIdentical)).toBe(true);
        expect(report.runs[0].training.steps.every((step) => step.weights.includes(0))).toBe(true);
        expect(report.runs[1].training.steps.every((step) => step.weights.every((weight) => weight === 0.5))).toBe(true);
        expect(progress.some((line) => line.includes("scdf step 3/3"))).toBe(true);
    });

    it("evaluates out of sample on --eval-battery and warns about evaluated tasks it never trained on", async () => {
        const training = join(directory, "training.jsonl");
        const rows = [
            ["en", "The cat sat on the"],
            ["en", "One, two, three,"],
            ["ja", "猫がいます。"],
            ["ja", "一、二、三、"]
        ];
        await writeFile(
            training,
            rows.map(([language, prompt], index) => JSON.stringify({id: `story-${index}`, task: "story", language, prompt})).join("\n")
        );
        const progress: string[] = [];
        const outcome = await runFairnessMitigateCommand({
            target: pair.targetPath,
            draft: pair.draftPath,
            battery: training,
            evalBattery: "mgsm:en@2,mgsm:ja@2",
            dataDirectory: batteryFixtureDirectory,
            out: join(directory, "story.gguf"),
            steps: "1",
            maxTokens: "4",
            resamples: "20",
            onProgress: (line) => progress.push(line)
        });
        expect(outcome.exitCode).toBe(0);
        expect(outcome.stdout).not.toContain("In-sample");
        expect(outcome.stdout).toContain("**Tasks evaluated but never trained on: mgsm-en, mgsm-ja.**");
        expect(
            progress.some((line) => /warning: the evaluation battery has tasks the training battery lacks \(mgsm-en, mgsm-ja\)/.test(line))
        ).toBe(true);
        expect(outcome.stdout).toMatch(/\| U \| \d\.\d{4} \| \d\.\d{4} \(([+−]\d+\.\d%|–)\) \| ≤ -10% \| −12% \|/);
    });

    it("takes the Disparate Impacts paper D.1's values with --preset disparate-impacts-paper, an explicit option still winning", async () => {
        const json = join(directory, "preset.json");
        const outcome = await runFairnessMitigateCommand({
            target: pair.targetPath,
            draft: pair.draftPath,
            battery: "mgsm:en@2,mgsm:ja@2",
            dataDirectory: batteryFixtureDirectory,
            out: join(directory, "preset.gguf"),
            preset: "disparate-impacts-paper",
            steps: "1",
            maxTokens: "4",
            resamples: "20",
            json
        });
        expect(outcome.stderr).toBe("");
        const report = JSON.parse(await readFile(json, "utf8")) as {
            before: {settings: {gamma: number; maxTokens: number}};
            runs: Array<{training: {options: Record<string, number>}}>;
        };
        expect(report.runs[0].training.options).toMatchObject({
            learningRate: 1e-4,
            warmupSteps: 0,
            minimumLearningRateRatio: 1,
            groupsPerStep: 5,
            gradientAccumulation: 4,
            batchPerTask: 8,
            gradientClip: 1
        });
        expect(report.before.settings).toMatchObject({gamma: 5, maxTokens: 4});
        expect(outcome.stdout).toContain("4 mini-batches per group and step");
        const noSteps = await runFairnessMitigateCommand({
            target: pair.targetPath,
            draft: pair.draftPath,
            battery: "mgsm:en@1,mgsm:ja@1",
            dataDirectory: batteryFixtureDirectory,
            out: join(directory, "never.gguf"),
            preset: "disparate-impacts-paper"
        });
        expect(noSteps.stderr).toMatch(/--steps: is required with --preset disparate-impacts-paper: the paper's STEPS is printed "10,00"/);
    });

    it("exits 2 with a typed message for a single group, an unknown language and bad flags", async () => {
        const base = {
            target: pair.targetPath,
            draft: pair.draftPath,
            dataDirectory: batteryFixtureDirectory,
            out: join(directory, "never.gguf"),
            maxTokens: "4",
            steps: "1"
        };
        const single = await runFairnessMitigateCommand({...base, battery: "mgsm:de@2"});
        expect(single).toMatchObject({exitCode: 2, stderr: expect.stringMatching(/--by: every item falls in one language \("de"\)/)});
        const unknown = await runFairnessMitigateCommand({...base, battery: "mgsm:de@2,mgsm:xx@2"});
        expect(unknown).toMatchObject({exitCode: 2, stderr: expect.stringMatching(/--battery: MGSM has no language "xx"/)});
        const singleEvaluation = await runFairnessMitigateCommand({...base, battery: "mgsm:de@2,mgsm:en@2", evalBattery: "mgsm:en@2"});
        expect(singleEvaluation.stderr).toMatch(/every item falls in one language \("en"\)/);
        const bad = async (extra: Record<string, string | undefined>) =>
            (await runFairnessMitigateCommand({...base, battery: "mgsm:de@1,mgsm:en@1", ...extra})).stderr;
        expect(await bad({steps: "0"})).toMatch(/--steps: must be at least 1/);
        expect(await bad({batchPerTask: "x"})).toMatch(/--batch-per-task: must be a non-negative integer/);
        expect(await bad({lr: "0"})).toMatch(/--lr: must be a finite positive number/);
        expect(await bad({out: undefined})).toMatch(/--out: is required/);
        expect(await bad({out: pair.targetPath})).toMatch(/--out: .* would overwrite the target/);
        expect(await bad({draft: join(directory, "absent.gguf")})).toMatch(/.*absent\.gguf: no such model file/);
        await expect(stat(base.out)).rejects.toThrow();
    });

    it("refuses a --method, --preset or --continuations outside their choices, naming the flag and the choices", async () => {
        const usage = (...args: string[]) => runCliCaptured("fairness", "mitigate", "--target", pair.targetPath, ...args);
        expect(await usage("--method", "dpo")).toMatchObject({
            code: 2,
            stderr: expect.stringMatching(
                /--method <scdf\|rebalance\|both>' argument 'dpo' is invalid\. Allowed choices are scdf, rebalance, both\./
            )
        });
        expect(await usage("--preset", "paper")).toMatchObject({
            code: 2,
            stderr: expect.stringMatching(
                /--preset <disparate-impacts-paper>' argument 'paper' is invalid\. Allowed choices are disparate-impacts-paper\./
            )
        });
        expect(await usage("--continuations", "teacher")).toMatchObject({
            code: 2,
            stderr: expect.stringMatching(
                /--continuations <kind>' argument 'teacher' is invalid\. Allowed choices are reference-or-greedy, target-sampled\./
            )
        });
    });
});
