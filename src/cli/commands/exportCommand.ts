import type {Command} from "commander";
import {stat} from "node:fs/promises";
import {InvalidInputError} from "../../errors.js";
import {type ExportType, exportLlamaGguf, exportTypes} from "../../foundry/exportLlamaGguf.js";
import {checkOutputFile} from "../checkOutputPath.js";
import {requiredText} from "../textOptions.js";
import {writeOutputFile} from "../writeOutputFile.js";

export interface ExportCommandOptions {
    readonly model?: string;
    readonly out?: string;
    readonly type?: string;
    readonly name?: string;
    readonly layers?: string;
}

/** `specgate export` without the terminal: returns a one-line summary. */
export async function runExport(options: ExportCommandOptions): Promise<string> {
    const model = requiredText(options.model, "--model");
    const out = requiredText(options.out, "--out");
    const type = (options.type ?? "f32").toLowerCase();
    if (!(type in exportTypes))
        throw new InvalidInputError(`expected one of ${Object.keys(exportTypes).join(", ")}, got "${options.type}"`, "--type");
    const layers = options.layers === undefined ? undefined : parseLayers(options.layers);
    await checkOutputFile(out, "--out");
    await writeOutputFile(() => exportLlamaGguf(model, out, type as ExportType, options.name, layers), out, "--out");
    const {size} = await stat(out);
    return `${out}: ${type}${layers === undefined ? "" : `, blocks ${layers.join(",")}`}, ${size} bytes`;
}

function parseLayers(text: string): number[] {
    const layers = text.split(",").map((part) => part.trim());
    const bad = layers.find((part) => !/^\d+$/.test(part));
    if (bad !== undefined) throw new InvalidInputError(`expected block numbers separated by commas, e.g. 0,3; got "${text}"`, "--layers");
    return layers.map(Number);
}

/** `specgate export`: rewrite a trained llama GGUF as F32, F16 or Q8_0 with the project's writer. */
export function registerExportCommand(program: Command): void {
    program
        .command("export")
        .description(
            "rewrite a llama GGUF (trained by `specgate train` or saved by llama.cpp) as F32, F16 or Q8_0 with the project's byte vocabulary"
        )
        .option("--model <IN.gguf>", "model to read")
        .option("--out <OUT.gguf>", "file to write")
        .option("--type <f32|f16|q8_0>", "storage type of the matrices (default f32)")
        .option("--name <NAME>", "general.name of the written model")
        .option(
            "--layers <i,j,...>",
            "write only these blocks, in this order, with the embeddings, final norm and output head (a self-speculative draft to fine-tune with `specgate train --from`)"
        )
        .action(async (options: ExportCommandOptions) => {
            process.stdout.write(`${await runExport(options)}\n`);
        });
}
