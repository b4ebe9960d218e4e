import {mkdir} from "node:fs/promises";
import {type Command, Option} from "commander";
import {GgmlTensorType} from "../../gguf/GgmlTensorType.js";
import {letterPieces} from "../../gguf/letterPieces.js";
import {writeRandomLlamaPair} from "../../gguf/randomLlamaModel.js";
import {resolveTokenizerVocabulary, tokenizerFamilies} from "../../gguf/tokenizerFamilies.js";
import {InvalidInputError} from "../../errors.js";
import {checkOutputFolder} from "../checkOutputPath.js";
import {integerOption} from "../parseIntegerOption.js";
import {numberOption} from "../samplingCliOptions.js";
import {writeOutputFile} from "../writeOutputFile.js";
import {checkWidenFlags, describeWidened, writeWidenedFixtures} from "./widenFixtures.js";

/** "d,layers,heads,ff" → a shape. */
function parseShape(text: string, field: string) {
    const parts = text.split(",").map(Number);
    if (parts.length !== 4 || parts.some((value) => !Number.isInteger(value) || value < 1))
        throw new InvalidInputError(`expected "embedding,layers,heads,feedForward" positive integers, got "${text}"`, field);
    const [embeddingLength, blockCount, headCount, feedForwardLength] = parts;
    return {embeddingLength, blockCount, headCount, headCountKv: headCount, feedForwardLength};
}

/** Option values as commander hands them over (--type checked by its choices()). */
interface FixturesCliOptions {
    out: string;
    seed: number;
    targetShape: string;
    draftShape: string;
    context: number;
    type: keyof typeof tensorTypes;
    vocabularySize: number;
    padVocabulary: number;
    tokenizer?: string;
    pre?: string;
    widenFrom?: string;
    widenDraftFrom?: string;
    perturb: number;
}

/** --type's choices. */
const tensorTypes = {F32: GgmlTensorType.F32, F16: GgmlTensorType.F16, Q8_0: GgmlTensorType.Q8_0} as const;

/**
 * `specgate fixtures`: write a deterministic random-weight target/draft GGUF pair sharing a
 * vocabulary, or (--widen-from) widened twins of a trained model.
 */
export function registerFixturesCommand(program: Command): void {
    const fixtures = program
        .command("fixtures")
        .description(
            "write a deterministic random-weight llama target + draft GGUF pair (for tests and timing; the text is noise), " +
                "or with --widen-from a widened twin of a trained llama: the same function at the cost of a larger shape"
        )
        .requiredOption("--out <DIR>", "directory for target.gguf and draft.gguf")
        .option("--seed <S>", "seed of the random weights (with --widen-from: of the --perturb noise)", integerOption(0), 1)
        .option("--target-shape <d,layers,heads,ff>", "target shape (with --widen-from: the twin's, required)", "64,2,4,128")
        .option("--draft-shape <d,layers,heads,ff>", "draft shape (with --widen-draft-from: default the draft source's own)", "32,1,2,64")
        .option(
            "--widen-from <FILE>",
            "write target.gguf as a widened twin of this llama GGUF at --target-shape: the same text and logits at the cost of that shape (heads = d / the source's head size)"
        )
        .option("--widen-draft-from <FILE>", "with --widen-from: also write draft.gguf as a widened twin of this GGUF at --draft-shape")
        .option(
            "--perturb <SIGMA>",
            "with --widen-from: the target twin's extra heads, units and layers write seeded noise of SIGMA x the source's output-projection RMS, so it agrees less with its draft (0 = exact twin)",
            numberOption("perturb"),
            0
        );
    addRandomFixtureOptions(fixtures).action(runFixturesAction);
}

/** Context, tensor type and vocabulary of the random pair. */
function addRandomFixtureOptions(command: Command): Command {
    return command
        .option("--context <N>", "context length", integerOption(16), 256)
        .addOption(new Option("--type <F32|F16|Q8_0>", "matrix tensor type").choices(Object.keys(tensorTypes)).default("F32"))
        .option(
            "--vocabulary-size <N>",
            "pad the 260-token byte vocabulary with letter pieces up to N tokens (e.g. 32000 or 152000, for logit-transfer costs)",
            integerOption(260, 400_000),
            260
        )
        .option(
            "--tokenizer <FAMILY|DIR>",
            `a real family's vocabulary, merges (or SentencePiece scores), special tokens and chat template instead of the byte vocabulary: ${Object.keys(tokenizerFamilies).join(", ")}, or a folder with tokenizer.json and tokenizer_config.json (byte-level BPE)`
        )
        .option("--pre <NAME>", "llama.cpp's pre-tokenizer name for a --tokenizer folder (qwen2, llama-bpe, …)")
        .option(
            "--pad-vocabulary <N>",
            "append N unused [PAD<id>] tokens (zero rows) to the target only, as Qwen2.5 7B's 152,064 rows against 0.5B's 151,936",
            integerOption(0, 400_000),
            0
        );
}

/** Writes the widened twins or the random pair and prints the paths written (stdout), a twin's description on stderr. */
async function runFixturesAction(options: FixturesCliOptions, command: Command): Promise<void> {
    checkWidenFlags(command, options.widenFrom !== undefined);
    if (options.widenFrom !== undefined) {
        const written = await writeWidenedFixtures({
            out: options.out,
            widenFrom: options.widenFrom,
            widenDraftFrom: options.widenDraftFrom,
            targetShape: parseShape(options.targetShape, "--target-shape"),
            draftShape: command.getOptionValueSource("draftShape") === "cli" ? parseShape(options.draftShape, "--draft-shape") : undefined,
            weightType: tensorTypes[options.type],
            perturb: options.perturb,
            seed: options.seed
        });
        for (const model of written) process.stderr.write(`${describeWidened(model)}\n`);
        process.stdout.write(written.map((model) => `${model.path}\n`).join(""));
        return;
    }
    const pair = await writeRandomFixtures(options);
    process.stdout.write(`${pair.targetPath}\n${pair.draftPath}\n`);
}

/** The random-weight pair in --out, on the byte vocabulary (padded to --vocabulary-size) or a --tokenizer's. */
async function writeRandomFixtures(options: FixturesCliOptions): Promise<{targetPath: string; draftPath: string}> {
    const target = {...parseShape(options.targetShape, "--target-shape"), contextLength: options.context};
    const draft = {...parseShape(options.draftShape, "--draft-shape"), contextLength: options.context};
    if (options.tokenizer !== undefined && options.vocabularySize !== 260)
        throw new InvalidInputError("pads the byte vocabulary, which --tokenizer replaces", "--vocabulary-size");
    const vocabulary = options.tokenizer === undefined ? undefined : await resolveTokenizerVocabulary(options.tokenizer, options.pre);
    await checkOutputFolder(options.out, "--out");
    return writeOutputFile(
        async () => {
            await mkdir(options.out, {recursive: true});
            return writeRandomLlamaPair({
                directory: options.out,
                seed: options.seed,
                weightType: tensorTypes[options.type],
                target,
                draft,
                targetPaddingTokens: options.padVocabulary,
                ...(vocabulary === undefined ? {pieces: letterPieces(options.vocabularySize - 260)} : {vocabulary})
            });
        },
        options.out,
        "--out"
    );
}
