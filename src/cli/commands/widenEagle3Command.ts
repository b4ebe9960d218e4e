import type {Command} from "commander";
import {ByteTokenizer} from "../../gguf/ByteTokenizer.js";
import {readEagle3Gguf} from "../../foundry/eagle3/readEagle3Gguf.js";
import {widenEagle3Head} from "../../foundry/eagle3/widenEagle3Head.js";
import {writeEagle3Gguf} from "../../foundry/eagle3/writeEagle3Gguf.js";
import {readLlamaGguf} from "../../foundry/model/readLlamaGguf.js";
import {checkOutputFile} from "../checkOutputPath.js";
import {requiredText} from "../textOptions.js";

/** Raw option values as commander hands them over. */
export interface WidenEagle3CommandOptions {
    readonly head?: string;
    readonly target?: string;
    readonly twin?: string;
    readonly out?: string;
}

/** `specgate widen-eagle3` without the terminal: writes the widened head and returns its config. */
export async function runWidenEagle3(options: WidenEagle3CommandOptions): Promise<ReturnType<typeof widenEagle3Head>["config"]> {
    const headPath = requiredText(options.head, "--head");
    const targetPath = requiredText(options.target, "--target");
    const twinPath = requiredText(options.twin, "--twin");
    const out = requiredText(options.out, "--out");
    await checkOutputFile(out, "--out");
    const widened = widenEagle3Head(readEagle3Gguf(headPath), readLlamaGguf(targetPath).config, readLlamaGguf(twinPath).config);
    await writeEagle3Gguf(out, widened.config, widened.weights, new ByteTokenizer(), {name: "specgate-eagle3-twin"});
    return widened.config;
}

/** `specgate widen-eagle3`: the head of a target, widened by the twin rule for the target's widened twin. */
export function registerWidenEagle3Command(program: Command): void {
    program
        .command("widen-eagle3")
        .description(
            "widen an EAGLE-3 head for a widened twin of its target (specgate fixtures --widen-from): on the unperturbed twin it drafts what the head drafts on the target"
        )
        .option("--head <HEAD.gguf>", "the head (eagle3 GGUF written by train-eagle3)")
        .option("--target <MODEL.gguf>", "the target the head was trained for")
        .option("--twin <TWIN.gguf>", "the target's widened twin")
        .option("--out <HEAD.gguf>", "the widened head")
        .action(async (options: WidenEagle3CommandOptions) => {
            const config = await runWidenEagle3(options);
            process.stdout.write(
                `${options.out}: d ${config.embeddingLength}, ${config.headCount} heads, ff ${config.feedForwardLength}, target layers ${config.targetLayers.join(",")}\n`
            );
        });
}
