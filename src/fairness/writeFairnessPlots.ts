import {mkdir} from "node:fs/promises";
import {join} from "node:path";
import {writeFileAtomic} from "../io/writeFileAtomic.js";
import type {FairnessAnalysis} from "./FairnessAnalysis.js";
import {renderAlphaDivergenceScatter} from "./renderAlphaDivergenceScatter.js";
import {renderSpeedupChart} from "./renderSpeedupChart.js";
import {svgToPng} from "../plots/svgToPng.js";

export interface WrittenPlots {
    /** File names inside the plot folder, SVG and PNG of each plot. */
    readonly files: readonly string[];
    readonly textRendered: boolean;
}

/** Writes speedup.{svg,png} and alpha-vs-divergence.{svg,png} into `directory` (created if missing). */
export async function writeFairnessPlots(analysis: FairnessAnalysis, directory: string): Promise<WrittenPlots> {
    await mkdir(directory, {recursive: true});
    const files: string[] = [];
    let textRendered = true;
    for (const [name, svg] of [
        ["speedup", renderSpeedupChart(analysis)],
        ["alpha-vs-divergence", renderAlphaDivergenceScatter(analysis)]
    ] as const) {
        const rendered = await svgToPng(svg);
        textRendered &&= rendered.textRendered;
        await writeFileAtomic(join(directory, `${name}.svg`), svg);
        await writeFileAtomic(join(directory, `${name}.png`), rendered.png);
        files.push(`${name}.svg`, `${name}.png`);
    }
    return {files, textRendered};
}
