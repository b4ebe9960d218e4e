import {mkdir, mkdtemp, readFile, readdir, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {batteryFixtureDirectory} from "../../batteries/testing/batteryFixtureDirectory.js";
import {writeRandomLlamaPair, type RandomLlamaPair} from "../../gguf/randomLlamaModel.js";
import {twoLanguageBattery} from "../../fairness/testing/fairnessFixtures.js";
import {skewedBigramPair} from "../../fairness/testing/skewedBigramPair.js";
import {runFairnessAnalyzeCommand} from "./fairnessCommand.js";
import {BigramBackend} from "../../engine/testing/BigramBackend.js";
import {ExitCode} from "../exitCodes.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";
import {runCliCaptured} from "../testing/runCliCaptured.js";

vi.setConfig(modelTestTimeouts);

let directory: string;
let pair: RandomLlamaPair;

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-fairness-"));
    // A 1,024-token context: the MGSM fixture prompts and 6 generated tokens fit it (in 256 they would be skipped).
    pair = await writeRandomLlamaPair({directory, seed: 31, target: {contextLength: 1024}, draft: {contextLength: 1024}});
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

describe("specgate fairness analyze", () => {
    it("analyses MGSM slices on a GGUF pair, writing the report, JSON and plots", async () => {
        const report = join(directory, "out", "report.md");
        const json = join(directory, "out", "analysis.json");
        const plots = join(directory, "out", "plots");
        await mkdir(join(directory, "out"));
        const outcome = await runFairnessAnalyzeCommand({
            target: pair.targetPath,
            draft: pair.draftPath,
            battery: "mgsm:en@2,mgsm:ja@2",
            dataDirectory: batteryFixtureDirectory,
            gamma: "3",
            maxTokens: "6",
            resamples: "200",
            report,
            json,
            plots
        });
        expect(outcome.stderr).toBe("");
        expect(outcome.exitCode).toBe(0);
        expect(outcome.stdout).toMatch(/^U = \d+\.\d{4} \[\d+\.\d{4}, \d+\.\d{4}\] over 2 language groups; speed-up max\/min \d+\.\d\d/);
        expect(outcome.stdout).toMatch(/^speed-up vs target-only per language \(95% CI\): en \d+\.\d\d× \[[\d.]+, [\d.]+\], ja /m);
        expect(outcome.stdout).toMatch(/^items skipped, prompt too long for the \d+-token context with 6 generated tokens: 0 of 4$/m);
        expect(outcome.stdout).toMatch(/^conclusion: speculation /m);
        const markdown = await readFile(report, "utf8");
        expect(markdown).toMatch(/^# Speculative decoding fairness report/);
        expect(markdown).toContain("| en | 2 |");
        expect(markdown).toContain("| ja | 2 |");
        expect(markdown).toContain("![Speed-up per language](plots/speedup.png)");
        expect(markdown).toContain("## How to read this");
        const analysis = JSON.parse(await readFile(json, "utf8")) as {
            by: string;
            groups: Array<{name: string; distributions: {fitness: number}}>;
            context: {size: number; skipped: unknown[]};
        };
        expect(analysis.by).toBe("language");
        expect(analysis.context.skipped).toEqual([]);
        expect(analysis.groups.map((group) => group.name)).toEqual(["en", "ja"]);
        expect(analysis.groups.every((group) => group.distributions.fitness > 0 && group.distributions.fitness <= 1)).toBe(true);
        expect((await readdir(plots)).sort()).toEqual(["alpha-vs-divergence.png", "alpha-vs-divergence.svg", "speedup.png", "speedup.svg"]);
    });

    it("prints the report on stdout with an injected backend, grouped by task on request", async () => {
        const outcome = await runFairnessAnalyzeCommand(
            {target: "t", draft: "d", battery: twoLanguageBattery, gamma: "2", maxTokens: "4", resamples: "50"},
            async (path) => skewedBigramPair(5)[path === "t" ? "target" : "draft"]
        );
        expect(outcome.exitCode).toBe(0);
        expect(outcome.stdout).toContain("grouped by **language**");
        expect(outcome.stdout).toMatch(/Best-served language: \*\*en\*\*/);
    });

    it("skips and counts items whose prompt does not fit the context with --max-tokens, never cutting one; most skipped is exit 3", async () => {
        // Bigram prompts are a token per letter, plus BOS: "fig" 4, "fig hij fig" 12. A 12-token context with 4 tokens to generate holds 8.
        const battery = join(directory, "long.jsonl");
        const line = (id: string, language: string, prompt: string) => JSON.stringify({id, task: "copy", language, prompt});
        const write = (rows: string[]) => writeFile(battery, rows.join("\n") + "\n");
        const run = () =>
            runFairnessAnalyzeCommand(
                {target: "t", draft: "d", battery, gamma: "2", maxTokens: "4", resamples: "50", json: "-"},
                async (path) => {
                    const model = skewedBigramPair(5)[path === "t" ? "target" : "draft"];
                    return new BigramBackend(model.table, 12);
                }
            );
        await write([line("en-1", "en", "fig"), line("en-2", "en", "fig hij fig"), line("ja-1", "ja", "abc"), line("ja-2", "ja", "ab")]);
        const half = await run();
        expect(half.exitCode, half.stderr).toBe(ExitCode.success);
        expect(half.stderr).toBe(
            "specgate fairness analyze: skipped 1 of 4 item(s) whose prompt does not fit the 12-token context with --max-tokens 4 " +
                "(raise --context-size or lower --max-tokens): en-2\n"
        );
        const analysis = JSON.parse(half.stdout) as {
            items: {id: string}[];
            context: {size: number; skipped: {id: string; promptTokens: number}[]};
        };
        expect(analysis.items.map((item) => item.id).sort()).toEqual(["en-1", "ja-1", "ja-2"]);
        expect(analysis.context).toEqual({size: 12, skipped: [{id: "en-2", group: "en", promptTokens: 12}]});

        await write([
            line("en-1", "en", "fig"),
            line("en-2", "en", "fig hij fig"),
            line("ja-1", "ja", "abc"),
            line("ja-2", "ja", "abcde abcde")
        ]);
        const exactlyHalf = await run();
        expect(exactlyHalf.exitCode).toBe(ExitCode.success);
        await write([
            line("en-1", "en", "fig"),
            line("en-2", "en", "fig hij fig"),
            line("ja-1", "ja", "abc"),
            line("ja-2", "ja", "abcde abcde"),
            line("ja-3", "ja", "abcde abcde")
        ]);
        const most = await run();
        expect(most.exitCode).toBe(ExitCode.insufficientData);
        expect(most.stderr).toMatch(/skipped 3 of 5 item\(s\) .*: en-2, ja-2, ja-3\n/);
        expect(most.stderr).toMatch(/INSUFFICIENT DATA: 3 of 5 item\(s\) were skipped \(more than half\)/);
        // A group left with no item that fits: nothing to compare, exit 3 before any run.
        await write([line("en-1", "en", "fig"), line("ja-1", "ja", "abcde abcde")]);
        const emptyGroup = await run();
        expect(emptyGroup).toMatchObject({exitCode: ExitCode.insufficientData, stdout: ""});
        expect(emptyGroup.stderr).toMatch(/INSUFFICIENT DATA: .*1 of 2 item\(s\) do not fit the 12-token context .* leaving no item in ja/);
    });

    it("exits 2 with a typed message for a single group, an unknown language and bad flags", async () => {
        const base = {
            target: pair.targetPath,
            draft: pair.draftPath,
            dataDirectory: batteryFixtureDirectory,
            maxTokens: "4",
            resamples: "20"
        };
        const single = await runFairnessAnalyzeCommand({...base, battery: "mgsm:de@2"});
        expect(single).toMatchObject({exitCode: 2, stderr: expect.stringMatching(/--by: every item falls in one language \("de"\)/)});
        const unknown = await runFairnessAnalyzeCommand({...base, battery: "mgsm:de@2,mgsm:xx@2"});
        expect(unknown).toMatchObject({exitCode: 2, stderr: expect.stringMatching(/--battery: MGSM has no language "xx"/)});
        for (const command of ["analyze", "mitigate"])
            expect(await runCliCaptured("fairness", command, "--by", "dialect")).toMatchObject({
                code: 2,
                stderr: expect.stringContaining("'--by <task|language>' argument 'dialect' is invalid. Allowed choices are task, language.")
            });
        expect((await runFairnessAnalyzeCommand({...base, battery: "mgsm@1", gamma: "x"})).exitCode).toBe(2);
        expect((await runFairnessAnalyzeCommand({...base, battery: "mgsm@1", target: undefined})).stderr).toMatch(/--target: is required/);
    });
});
