import {existsSync} from "node:fs";
import {readFile} from "node:fs/promises";
import {createRequire} from "node:module";
import {initWasm, Resvg} from "@resvg/resvg-wasm";

/** Fonts tried in order, with the family name the SVGs ask for; the first present one is used. */
const fontCandidates = [
    {path: "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", family: "DejaVu Sans"},
    {path: "/usr/share/fonts/TTF/DejaVuSans.ttf", family: "DejaVu Sans"},
    {path: "/usr/share/fonts/dejavu/DejaVuSans.ttf", family: "DejaVu Sans"},
    {path: "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf", family: "Liberation Sans"}
];

let ready: Promise<void> | undefined;
let font: Promise<{buffer: Uint8Array; family: string} | null> | undefined;

export interface RenderedPng {
    readonly png: Uint8Array;
    /** False when no font was found: the PNG then has every shape but no text (the SVG keeps it). */
    readonly textRendered: boolean;
}

/**
 * Rasterises an SVG with resvg's WebAssembly build. The WASM build cannot read system fonts by
 * itself, so a TTF is loaded from the usual Linux locations; without one, text is left out.
 */
export async function svgToPng(svg: string, scale = 2): Promise<RenderedPng> {
    ready ??= readFile(createRequire(import.meta.url).resolve("@resvg/resvg-wasm/index_bg.wasm")).then((wasm) => initWasm(wasm));
    font ??= loadFont();
    await ready;
    const loaded = await font;
    const renderer = new Resvg(svg, {
        fitTo: {mode: "zoom", value: scale},
        font:
            loaded == null
                ? {fontBuffers: []}
                : {fontBuffers: [loaded.buffer], defaultFontFamily: loaded.family, sansSerifFamily: loaded.family}
    });
    try {
        const image = renderer.render();
        try {
            return {png: image.asPng(), textRendered: loaded != null};
        } finally {
            image.free();
        }
    } finally {
        renderer.free();
    }
}

async function loadFont(): Promise<{buffer: Uint8Array; family: string} | null> {
    const found = fontCandidates.find((candidate) => existsSync(candidate.path));
    return found == null ? null : {buffer: new Uint8Array(await readFile(found.path)), family: found.family};
}
