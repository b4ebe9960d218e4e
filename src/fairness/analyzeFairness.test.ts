import {existsSync} from "node:fs";
import {join} from "node:path";
import {describe, expect, it} from "vitest";
import {defaultDataDirectory} from "../batteries/defaultDataDirectory.js";
import {loadBattery} from "../batteries/loadBattery.js";
import {loadJsonlBattery} from "../batteries/loadJsonlBattery.js";
import {mgsmLanguages} from "../batteries/loadMgsm.js";
import {batteryFixtureDirectory} from "../batteries/testing/batteryFixtureDirectory.js";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import {InvalidInputError, SingleGroupError, UnknownLanguageError} from "../errors.js";
import {analyzeFairness} from "./analyzeFairness.js";
import type {FairnessAnalysis} from "./FairnessAnalysis.js";
import {loadFairnessBattery} from "./loadFairnessBattery.js";
import {twoLanguageBattery} from "./testing/fairnessFixtures.js";
import {skewedBigramPair} from "./testing/skewedBigramPair.js";
import {unfairness} from "./unfairness.js";

/** The Disparate Impacts paper Theorem 2 holds exactly for the analytic α when the data distribution is one-hot on references. */
function expectTheoremTwo(analysis: FairnessAnalysis): void {
    for (const group of analysis.groups) {
        const {fitnessGap, targetMisfit} = group.distributions;
        if (fitnessGap == null) continue;
        expect(fitnessGap).toBeLessThanOrEqual(targetMisfit! + 1e-12);
    }
}

describe("analyzeFairness on a bigram pair with a built-in disparity", () => {
    it("finds the poorly served language on every measure and ties U to the groups' D_T", async () => {
        const {target, draft} = skewedBigramPair(5);
        const items = await loadJsonlBattery(twoLanguageBattery);
        const analysis = await analyzeFairness({target, draft, items, gamma: 3, maxTokens: 8, resamples: 300, seed: 2});
        expect(analysis.by).toBe("language");
        expect(analysis.groups.map((group) => [group.name, group.items, group.referenceItems])).toEqual([
            ["en", 3, 2],
            ["ja", 3, 3]
        ]);
        const [en, ja] = analysis.groups;
        // The draft copies the target on the well-served side, so greedy drafts there always pass.
        expect(en.measured.acceptanceRate).toBe(1);
        expect(en.measured.meanAcceptanceLength).toBe(4);
        expect(ja.measured.acceptanceRate).toBeLessThan(1);
        expect(ja.distributions.crossEntropy.estimate).toBeGreaterThan(en.distributions.crossEntropy.estimate);
        expect(ja.distributions.alpha).toBeLessThan(en.distributions.alpha);
        expect(ja.distributions.fitness!).toBeLessThan(en.distributions.fitness!);
        expect(analysis.across.bestServedGroup).toBe("en");
        expect(analysis.across.worstServedGroup).toBe("ja");
        const divergences = analysis.groups.map((group) => group.distributions.crossEntropy.estimate);
        expect(analysis.across.unfairness.estimate).toBeCloseTo(unfairness(divergences), 12);
        expect(analysis.across.unfairness.estimate).toBeCloseTo((divergences[1] - divergences[0]) ** 2 / 2, 12);
        expect(analysis.across.unfairness.low).toBeGreaterThan(0);
        expect(analysis.across.fitnessAlphaSpearman.groups).toBe(1);
        expect(analysis.across.divergenceAlphaSpearman).toBe(-1);
        // Strict verification at temperature 0 reproduces the target's output.
        for (const group of analysis.groups) expect(group.measured.identicalShare).toBe(1);
        expect(analysis.items.find((item) => item.id === "en-3")!.continuation).toBe("target-output");
        expectTheoremTwo(analysis);
    });

    it("ends every run at a stop string, and scores the shorter target output when there is no reference", async () => {
        const {target, draft} = skewedBigramPair(5);
        const items = await loadJsonlBattery(twoLanguageBattery);
        const free = await analyzeFairness({target, draft, items, gamma: 3, maxTokens: 8, resamples: 50, seed: 2});
        // en-3 has no reference; its greedy output cycles through f–j, so it meets an "h" within 8 tokens.
        const stopped = await analyzeFairness({target, draft, items, gamma: 3, maxTokens: 8, resamples: 50, seed: 2, stop: ["h"]});
        expect(stopped.settings.stop).toEqual(["h"]);
        const tokens = (analysis: FairnessAnalysis) => analysis.items.map((item) => item.run.baselineTokens);
        expect(tokens(stopped).every((count, index) => count <= tokens(free)[index])).toBe(true);
        expect(tokens(stopped).reduce((a, b) => a + b)).toBeLessThan(tokens(free).reduce((a, b) => a + b));
        const positions = (analysis: FairnessAnalysis, id: string) => analysis.items.find((item) => item.id === id)!.divergences.positions;
        expect(positions(stopped, "en-3")).toBeLessThan(positions(free, "en-3"));
    });

    it("gives the same U, D_T and their intervals for the same seed", async () => {
        const items = await loadJsonlBattery(twoLanguageBattery);
        const run = async (seed: number) => {
            const {target, draft} = skewedBigramPair(5);
            const analysis = await analyzeFairness({target, draft, items, gamma: 2, maxTokens: 6, resamples: 200, seed});
            return {u: analysis.across.unfairness, d: analysis.groups.map((group) => group.distributions.crossEntropy)};
        };
        const first = await run(9);
        expect(await run(9)).toEqual(first);
        const reseeded = await run(10);
        expect(reseeded.u.estimate).toBe(first.u.estimate);
        expect([reseeded.u.low, reseeded.u.high]).not.toEqual([first.u.low, first.u.high]);
    });

    it("groups by task on request and rejects a single group or an unknown language", async () => {
        const {target, draft} = skewedBigramPair(5);
        const items = await loadJsonlBattery(twoLanguageBattery);
        await expect(analyzeFairness({target, draft, items, by: "task", maxTokens: 4})).rejects.toThrow(SingleGroupError);
        await expect(analyzeFairness({target, draft, items: items.filter((item) => item.language === "ja"), maxTokens: 4})).rejects.toThrow(
            /one language \("ja"\)/
        );
        const mistagged = items.map((item) => (item.id === "ja-2" ? {...item, language: "jp"} : item));
        await expect(analyzeFairness({target, draft, items: mistagged, maxTokens: 4})).rejects.toThrow(UnknownLanguageError);
        await expect(analyzeFairness({target, draft, items: mistagged, maxTokens: 4})).rejects.toThrow(/item ja-2: language: "jp"/);
        const untagged = items.map((item) => (item.id === "en-1" ? {...item, language: undefined} : item));
        await expect(analyzeFairness({target, draft, items: untagged, by: "language", maxTokens: 4})).rejects.toThrow(
            /en-1 has no language/
        );
        await expect(analyzeFairness({target, draft, items, gamma: 0})).rejects.toThrow(InvalidInputError);
        await expect(loadFairnessBattery("mgsm:de@2,mgsm:xx@2", batteryFixtureDirectory)).rejects.toThrow(UnknownLanguageError);
    });
});

describe("analyzeFairness on MGSM", () => {
    const analyzeMgsm = async (spec: string, dataDirectory?: string) => {
        const target = BigramBackend.random(3, 40);
        const draft = target.noisyCopy(4, 1.5);
        const items = await loadBattery(spec, dataDirectory);
        return analyzeFairness({target, draft, items, gamma: 2, maxTokens: 4, resamples: 100});
    };

    it("runs on the committed slices in every shipped language", async () => {
        const analysis = await analyzeMgsm("mgsm@2", batteryFixtureDirectory);
        expect(analysis.groups.map((group) => group.name)).toEqual([...mgsmLanguages]);
        for (const group of analysis.groups) {
            expect(group.referenceItems).toBe(2);
            expect(Number.isFinite(group.distributions.crossEntropy.estimate)).toBe(true);
            expect(group.distributions.fitness).not.toBeNull();
        }
        expect(Number.isFinite(analysis.across.unfairness.estimate)).toBe(true);
        expectTheoremTwo(analysis);
    });

    describe.runIf(existsSync(join(defaultDataDirectory(), "mgsm", "mgsm_en.tsv")))("on the full shared data", () => {
        it("runs in every shipped language", async () => {
            const analysis = await analyzeMgsm("mgsm@3");
            expect(analysis.groups.map((group) => [group.name, group.items])).toEqual(mgsmLanguages.map((language) => [language, 3]));
            expect(analysis.across.unfairness.high).toBeGreaterThanOrEqual(analysis.across.unfairness.low);
            expectTheoremTwo(analysis);
        });
    });
});
