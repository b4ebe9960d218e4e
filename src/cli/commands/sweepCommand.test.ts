import {mkdtemp, readdir, readFile, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {skewedBigramPair} from "../../fairness/testing/skewedBigramPair.js";
import {BigramBackend} from "../../engine/testing/BigramBackend.js";
import {targetReferenceBattery} from "../../tune/testing/targetReferenceBattery.js";
import {createProgram} from "../createProgram.js";
import {runSweepCommand} from "./sweepCommand.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";
import {runCliCaptured} from "../testing/runCliCaptured.js";
import type {DraftSampling} from "../draftSamplingOption.js";

vi.setConfig(modelTestTimeouts);

let directory: string;
let battery: string;
const pair = skewedBigramPair(5);
const openPair = async (path: string) => (path === "target.gguf" ? pair.target : pair.draft);

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-sweep-"));
    battery = join(directory, "battery.jsonl");
    const items = await targetReferenceBattery(pair.target);
    await writeFile(battery, items.map(({id, task, prompt, reference}) => JSON.stringify({id, task, prompt, reference})).join("\n") + "\n");
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

describe("specgate sweep", () => {
    it("sweeps a JSONL battery and writes the report, JSON and the frontier plot", async () => {
        const report = join(directory, "report.md");
        const json = join(directory, "sweep.json");
        const plots = join(directory, "plots");
        const progress: string[] = [];
        const outcome = await runSweepCommand(
            {
                target: "target.gguf",
                draft: "draft.gguf",
                battery,
                policies: "fuzzy:js:0.1, fuzzy:js:0.6",
                gamma: "2,3",
                maxTokens: "4",
                report,
                json,
                plots
            },
            openPair,
            (line) => progress.push(line)
        );
        expect(outcome.exitCode).toBe(0);
        expect(outcome.stdout).toMatch(/^12 configurations on 16 items; frontier: /);
        expect(progress[0]).toMatch(/^target-only: accuracy 100\.0%, [\d.]+ tok\/s, ALen 1\.00$/);
        const markdown = await readFile(report, "utf8");
        expect(markdown).toMatch(/^# Accuracy \/ speed sweep/);
        expect(markdown).toContain("![Accuracy vs tokens/s](plots/frontier.png)");
        expect(markdown).toContain("| draft-only | – |");
        expect(markdown).toMatch(/\| random:[\d.]+ γ=3 \(≈ fuzzy:js:0\.6 γ=3\) \| 3 \|/);
        const written = JSON.parse(await readFile(json, "utf8")) as {
            points: Array<{label: string; onFrontier: boolean; outcomes: unknown[]}>;
            randomAllocation: unknown[];
        };
        expect(written.points).toHaveLength(12);
        expect(written.points.some((point) => point.onFrontier)).toBe(true);
        expect(written.points[0].outcomes).toHaveLength(16);
        expect(written.randomAllocation).toHaveLength(21);
        expect((await readdir(plots)).sort()).toEqual(["frontier.png", "frontier.svg"]);
        const png = await readFile(join(plots, "frontier.png"));
        expect([...png.subarray(1, 4)].map((code) => String.fromCharCode(code)).join("")).toBe("PNG");
    });

    it("skips and counts items whose prompt does not fit the context with --max-tokens; more than half skipped is exit 3", async () => {
        // A 12-token context with 4 tokens to generate holds a prompt of 8 (BOS and 7 letters).
        const small = {target: new BigramBackend(pair.target.table, 12), draft: new BigramBackend(pair.draft.table, 12)};
        const openSmall = async (path: string) => (path === "target.gguf" ? small.target : small.draft);
        const file = join(directory, "long.jsonl");
        const write = (prompts: string[]) =>
            writeFile(
                file,
                prompts.map((prompt, index) => JSON.stringify({id: `i${index}`, task: "copy", prompt, reference: "x"})).join("\n") + "\n"
            );
        const run = (report?: string) =>
            runSweepCommand(
                {
                    target: "target.gguf",
                    draft: "draft.gguf",
                    battery: file,
                    policies: "fuzzy:js:0.4",
                    gamma: "2",
                    maxTokens: "4",
                    json: "-",
                    report
                },
                openSmall
            );
        await write(["fig", "abc", "fig hij fig", "jig"]);
        const report = join(directory, "long.md");
        const few = await run(report);
        expect(few.exitCode, few.stderr).toBe(0);
        expect(few.stderr).toBe(
            "specgate sweep: skipped 1 of 4 item(s) whose prompt does not fit the 12-token context with --max-tokens 4 " +
                "(raise --context-size or lower --max-tokens): i2\n"
        );
        expect(await readFile(report, "utf8")).toMatch(/## Skipped items\n\n1 of 4 item\(s\) were not run: .*: i2\.\n$/);
        const written = JSON.parse(few.stdout) as {
            points: {outcomes: {id: string}[]}[];
            context: unknown;
        };
        expect(written.context).toEqual({size: 12, maxTokens: 4, total: 4, skipped: ["i2"]});
        expect(written.points[0].outcomes.map((outcome) => outcome.id)).toEqual(["i0", "i1", "i3"]);

        await write(["fig", "fig hij fig", "abcde abcde"]);
        const most = await run();
        expect(most.exitCode).toBe(3);
        expect(most.stderr).toMatch(/INSUFFICIENT DATA: 2 of 3 item\(s\) were skipped \(more than half\)/);
        await write(["fig hij fig", "abcde abcde"]);
        const none = await run();
        expect(none).toMatchObject({exitCode: 3, stdout: ""});
        expect(none.stderr).toMatch(/INSUFFICIENT DATA: none of the 2 item\(s\) fits the 12-token context with --max-tokens 4/);
    });

    it("--oracle adds the headroom section and JSON, and is refused at a temperature above 0", async () => {
        const report = join(directory, "oracle.md");
        const json = join(directory, "oracle.json");
        const outcome = await runSweepCommand(
            {
                target: "target.gguf",
                draft: "draft.gguf",
                battery,
                policies: "fuzzy:js:0.1",
                gamma: "2",
                maxTokens: "4",
                oracle: true,
                report,
                json
            },
            openPair
        );
        expect(outcome.exitCode).toBe(0);
        expect(await readFile(report, "utf8")).toContain("## Headroom: the score-preserving oracle");
        const written = JSON.parse(await readFile(json, "utf8")) as {
            oracle: Array<{gamma: number; strict: {meanAcceptanceLength: number}}>;
        };
        expect(written.oracle.map((measurement) => measurement.gamma)).toEqual([2]);
        const warm = await runSweepCommand(
            {
                target: "target.gguf",
                draft: "draft.gguf",
                battery,
                policies: "fuzzy:js:0.1",
                maxTokens: "4",
                oracle: true,
                temperature: "0.8"
            },
            openPair
        );
        expect(warm).toMatchObject({
            exitCode: 2,
            stderr: expect.stringMatching(/--oracle: is defined for greedy decoding; got temperature 0\.8/)
        });
    });

    it("--draft-sampling greedy drafts the draft's argmax instead of a sample, and the JSON records it", async () => {
        const run = async (draftSampling: DraftSampling | undefined) => {
            const json = join(directory, `draft-${draftSampling ?? "default"}.json`);
            const outcome = await runSweepCommand(
                {
                    target: "target.gguf",
                    draft: "draft.gguf",
                    battery,
                    policies: "strict",
                    gamma: "2",
                    maxTokens: "8",
                    temperature: "1",
                    draftSampling,
                    json
                },
                openPair
            );
            expect(outcome.exitCode).toBe(0);
            return JSON.parse(await readFile(json, "utf8")) as {
                settings: {draftSampling: string};
                points: Array<{label: string; acceptedTokens: number; draftTokens: number}>;
            };
        };
        const sampled = await run(undefined);
        const greedy = await run("greedy");
        expect(sampled.settings.draftSampling).toBe("sample");
        expect(greedy.settings.draftSampling).toBe("greedy");
        const strict = (result: typeof sampled) => result.points.find((point) => point.label.startsWith("strict"))!;
        // Same seeds and items: only the proposals differ, so the accepted counts do.
        expect(strict(greedy).acceptedTokens).not.toBe(strict(sampled).acceptedTokens);
        expect(await runCliCaptured("sweep", "--draft-sampling", "beam")).toMatchObject({
            code: 2,
            stderr: expect.stringContaining("'--draft-sampling <mode>' argument 'beam' is invalid. Allowed choices are sample, greedy.")
        });
    });

    it("exits 2 with a typed message for an empty battery, an unscorable one and bad flags", async () => {
        const empty = join(directory, "empty.jsonl");
        await writeFile(empty, "");
        const unscored = join(directory, "unscored.jsonl");
        await writeFile(unscored, `${JSON.stringify({id: "a", task: "t", prompt: "abc"})}\n`);
        const base = {target: "target.gguf", draft: "draft.gguf", policies: "fuzzy:js:0.3", maxTokens: "4"};
        expect(await runSweepCommand({...base, battery: empty}, openPair)).toMatchObject({
            exitCode: 2,
            stderr: expect.stringMatching(/--battery: has no items/)
        });
        expect(await runSweepCommand({...base, battery: unscored}, openPair)).toMatchObject({
            exitCode: 2,
            stderr: expect.stringMatching(/--battery: 1 of 1 items cannot be scored/)
        });
        expect((await runSweepCommand({...base, battery, gamma: "2,x"}, openPair)).stderr).toMatch(
            /--gamma: expected integers in \[1, 64\], got "x"/
        );
        expect((await runSweepCommand({...base, battery, policies: "fuzzy:js"}, openPair)).stderr).toMatch(/--policies/);
        expect((await runSweepCommand({...base, battery, target: undefined}, openPair)).stderr).toMatch(/--target: is required/);
    });

    it("is registered on the program", () => {
        const names = createProgram().commands.map((command) => command.name());
        expect(names).toContain("sweep");
        expect(names).toContain("calibrate");
    });
});
