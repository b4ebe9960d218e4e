import {existsSync} from "node:fs";
import {mkdtemp, readFile, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {loadJsonlBattery} from "../batteries/loadJsonlBattery.js";
import {analyzeFairness} from "./analyzeFairness.js";
import type {FairnessAnalysis} from "./FairnessAnalysis.js";
import {niceTicks} from "../plots/niceTicks.js";
import {renderAlphaDivergenceScatter} from "./renderAlphaDivergenceScatter.js";
import {renderSpeedupChart} from "./renderSpeedupChart.js";
import {twoLanguageBattery} from "./testing/fairnessFixtures.js";
import {skewedBigramPair} from "./testing/skewedBigramPair.js";
import {writeFairnessPlots} from "./writeFairnessPlots.js";

let directory: string;
let analysis: FairnessAnalysis;

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-fairness-plots-"));
    const {target, draft} = skewedBigramPair(5);
    analysis = await analyzeFairness({
        target,
        draft,
        items: await loadJsonlBattery(twoLanguageBattery),
        gamma: 3,
        maxTokens: 6,
        resamples: 100
    });
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

describe("fairness plots", () => {
    it("draw one bar with a CI whisker per group and one measured and one analytic point per group", () => {
        const chart = renderSpeedupChart(analysis);
        expect(chart).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
        expect(chart).toContain(">en</text>");
        expect(chart).toContain(">ja</text>");
        // Background, one bar per group, one legend swatch.
        expect(chart.match(/<rect /g)).toHaveLength(1 + 2 + 1);
        const scatter = renderAlphaDivergenceScatter(analysis);
        // Two points per group plus two legend markers.
        expect(scatter.match(/<circle /g)).toHaveLength(2 * 2 + 2);
        expect(scatter).toContain("1 − √(D/2) floor");
        expect(scatter).not.toMatch(/NaN|Infinity/);
    });

    it("escape group names", () => {
        const renamed = {...analysis, groups: analysis.groups.map((group, index) => (index === 0 ? {...group, name: "<en & co>"} : group))};
        expect(renderSpeedupChart(renamed)).toContain("&lt;en &amp; co&gt;");
    });

    it("write SVG and PNG files, with text where a font exists", async () => {
        const written = await writeFairnessPlots(analysis, join(directory, "plots"));
        expect(written.files).toEqual(["speedup.svg", "speedup.png", "alpha-vs-divergence.svg", "alpha-vs-divergence.png"]);
        if (existsSync("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")) expect(written.textRendered).toBe(true);
        const png = await readFile(join(directory, "plots", "speedup.png"));
        expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
        // IHDR width at scale 2 of a 640-wide SVG.
        expect(png.readUInt32BE(16)).toBe(1280);
        expect(await readFile(join(directory, "plots", "alpha-vs-divergence.svg"), "utf8")).toBe(renderAlphaDivergenceScatter(analysis));
    });

    it("use round ticks that cover the data", () => {
        expect(niceTicks(0, 1)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
        expect(niceTicks(0, 2.3)).toEqual([0, 0.5, 1, 1.5, 2, 2.5]);
        // Span 1.09 / 5 = 0.218 > 0.2, so the step is 0.5.
        expect(niceTicks(0.62, 1.71)).toEqual([0.5, 1, 1.5, 2]);
        expect(niceTicks(0.62, 1.5)).toEqual([0.6, 0.8, 1, 1.2, 1.4, 1.6]);
    });
});
