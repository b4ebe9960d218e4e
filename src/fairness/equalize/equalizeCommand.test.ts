import {mkdtemp, readFile, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {batteryFixtureDirectory} from "../../batteries/testing/batteryFixtureDirectory.js";
import {runFairnessAnalyzeCommand} from "../../cli/commands/fairnessCommand.js";
import {writeRandomLlamaPair, type RandomLlamaPair} from "../../gguf/randomLlamaModel.js";
import type {FairnessAnalysis} from "../FairnessAnalysis.js";
import {twoLanguageBattery} from "../testing/fairnessFixtures.js";
import {skewedBigramPair} from "../testing/skewedBigramPair.js";
import type {GammaServingHints} from "./gammaServingHints.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

let directory: string;
let pair: RandomLlamaPair;

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-equalize-"));
    // A 1,024-token context: the MGSM fixture prompts and 6 generated tokens fit it (in 256 they would be skipped).
    pair = await writeRandomLlamaPair({directory, seed: 31, target: {contextLength: 1024}, draft: {contextLength: 1024}});
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

describe("specgate fairness analyze --equalize", () => {
    it("measures the cost curve on a GGUF pair, re-runs each group at its γ and writes the hints, the report section and the JSON section", async () => {
        const hintsPath = join(directory, "hints.json");
        const report = join(directory, "report.md");
        const json = join(directory, "analysis.json");
        const outcome = await runFairnessAnalyzeCommand({
            target: pair.targetPath,
            draft: pair.draftPath,
            battery: "mgsm:en@2,mgsm:ja@2",
            dataDirectory: batteryFixtureDirectory,
            gamma: "3",
            maxTokens: "6",
            resamples: "100",
            equalize: hintsPath,
            equalizeMaxGamma: "4",
            report,
            json
        });
        expect(outcome.stderr).toBe("");
        expect(outcome.exitCode).toBe(0);
        expect(outcome.stdout).toMatch(/; equalized γ en [1-4], ja [1-4]: measured max\/min \d+\.\d\d → \d+\.\d\d$/m);
        const hints = JSON.parse(await readFile(hintsPath, "utf8")) as GammaServingHints;
        expect(hints).toMatchObject({
            format: "specgate-gamma-hints/1",
            by: "language",
            policy: "strict",
            temperature: 0,
            target: pair.targetPath,
            draft: pair.draftPath
        });
        expect(Object.keys(hints.gamma)).toEqual(["en", "ja"]);
        expect(Object.values(hints.gamma).every((gamma) => Number.isInteger(gamma) && gamma >= 1 && gamma <= 4)).toBe(true);
        expect(hints.defaultGamma).toBe(3);
        const analysis = JSON.parse(await readFile(json, "utf8")) as FairnessAnalysis;
        const equalize = analysis.equalize!;
        expect(equalize.groups.map((group) => [group.name, group.gamma])).toEqual(Object.entries(hints.predictedGamma));
        // The hint is the predicted γ or, where the re-run contradicted it, the global one.
        expect(equalize.groups.every((group) => [group.gamma, 3].includes(hints.gamma[group.name]))).toBe(true);
        expect(equalize.costs.targetMilliseconds).toHaveLength(5);
        expect(equalize.costs.targetMilliseconds.every((time) => time > 0)).toBe(true);
        // Greedy strict decoding on llama.cpp: the re-runs reproduce target-only at every γ.
        expect(equalize.groups.every((group) => group.measured.identicalShareAtOwnGamma === 1)).toBe(true);
        expect(await readFile(report, "utf8")).toContain("## Equalized serving hints (--equalize)");
    });

    it("prints the section with an injected backend and checks its flags", async () => {
        const open = async (path: string) => skewedBigramPair(5)[path === "t" ? "target" : "draft"];
        const base = {target: "t", draft: "d", battery: twoLanguageBattery, gamma: "2", maxTokens: "4", resamples: "50"};
        const outcome = await runFairnessAnalyzeCommand({...base, equalize: join(directory, "bigram-hints.json")}, open);
        expect(outcome.exitCode).toBe(0);
        expect(outcome.stdout).toContain("| speed-up across groups | max/min | variance | fastest | slowest |");
        expect(outcome.stdout).toContain("**Against s-CDF.**");
        const hints = JSON.parse(await readFile(join(directory, "bigram-hints.json"), "utf8")) as GammaServingHints;
        expect(Object.keys(hints.gamma)).toEqual(["en", "ja"]);

        expect((await runFairnessAnalyzeCommand({...base, equalizeMaxGamma: "4"}, open)).stderr).toMatch(
            /--equalize-max-gamma: needs --equalize OUT\.json/
        );
        expect((await runFairnessAnalyzeCommand({...base, equalize: "h.json", equalizeMaxGamma: "0"}, open)).stderr).toMatch(
            /--equalize-max-gamma: must be an integer in \[1, 64\], got 0/
        );
        const unwritable = await runFairnessAnalyzeCommand({...base, equalize: join(directory, "missing", "hints.json")}, open);
        expect(unwritable).toMatchObject({
            exitCode: 2,
            stderr: expect.stringMatching(/--equalize: cannot write .*missing\/hints\.json: the folder .*missing does not exist/)
        });
    });
});
