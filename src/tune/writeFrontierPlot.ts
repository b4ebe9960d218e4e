import {mkdir} from "node:fs/promises";
import {join} from "node:path";
import {svgToPng} from "../plots/svgToPng.js";
import {writeFileAtomic} from "../io/writeFileAtomic.js";
import {renderFrontierChart} from "./renderFrontierChart.js";
import type {SweepResult} from "./SweepResult.js";

export interface WrittenFrontierPlot {
    /** File names inside the plot folder. */
    readonly files: readonly string[];
    /** False when no TrueType font was found: the PNG then lacks text (the SVG keeps it). */
    readonly textRendered: boolean;
}

/** Writes frontier.svg and frontier.png into `directory` (created if missing). */
export async function writeFrontierPlot(result: SweepResult, directory: string): Promise<WrittenFrontierPlot> {
    await mkdir(directory, {recursive: true});
    const svg = renderFrontierChart(result);
    const rendered = await svgToPng(svg);
    await writeFileAtomic(join(directory, "frontier.svg"), svg);
    await writeFileAtomic(join(directory, "frontier.png"), rendered.png);
    return {files: ["frontier.svg", "frontier.png"], textRendered: rendered.textRendered};
}
