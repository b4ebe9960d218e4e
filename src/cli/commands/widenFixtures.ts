import {mkdir} from "node:fs/promises";
import {join} from "node:path";
import type {Command} from "commander";
import {InvalidInputError} from "../../errors.js";
import type {GgmlTensorType} from "../../gguf/GgmlTensorType.js";
import {GgufReader} from "../../gguf/GgufReader.js";
import {widenLlamaModel, type WidenedLlamaModel, type WidenedShape} from "../../gguf/widenLlamaModel.js";
import {readSourceHyperparameters} from "../../gguf/widenLlamaModelShape.js";
import {checkOutputFolder} from "../checkOutputPath.js";
import {writeOutputFile} from "../writeOutputFile.js";

export interface WidenFixturesOptions {
    readonly out: string;
    readonly widenFrom: string;
    readonly widenDraftFrom?: string;
    readonly targetShape: WidenedShape;
    /** undefined: the draft source's own shape. */
    readonly draftShape?: WidenedShape;
    readonly weightType: GgmlTensorType;
    readonly perturb: number;
    readonly seed: number;
}

/** Flags of the random fixtures that a twin, which keeps its source's vocabulary and context, has no use for. */
const randomOnlyFlags = {
    context: "--context",
    vocabularySize: "--vocabulary-size",
    tokenizer: "--tokenizer",
    pre: "--pre",
    padVocabulary: "--pad-vocabulary"
} as const;

/** Refuses flag combinations that mean nothing for widened twins (or nothing without them). */
export function checkWidenFlags(command: Command, widening: boolean): void {
    const given = (key: string): boolean => command.getOptionValueSource(key) === "cli";
    if (!widening) {
        for (const [key, flag] of [
            ["widenDraftFrom", "--widen-draft-from"],
            ["perturb", "--perturb"]
        ] as const)
            if (given(key)) throw new InvalidInputError("applies to widened twins only: give --widen-from too", flag);
        return;
    }
    for (const [key, flag] of Object.entries(randomOnlyFlags))
        if (given(key))
            throw new InvalidInputError("does not apply to --widen-from: a twin keeps its source's vocabulary and context", flag);
    if (!given("targetShape"))
        throw new InvalidInputError("is required with --widen-from (the twin's d,layers,heads,ff)", "--target-shape");
}

/** Writes DIR/target.gguf (and DIR/draft.gguf) as widened twins; returns what was written. */
export async function writeWidenedFixtures(options: WidenFixturesOptions): Promise<WidenedLlamaModel[]> {
    if (!(options.perturb >= 0)) throw new InvalidInputError(`must be a number >= 0, got ${options.perturb}`, "--perturb");
    await checkOutputFolder(options.out, "--out");
    const draftShape =
        options.widenDraftFrom === undefined ? undefined : (options.draftShape ?? ownShape(options.widenDraftFrom, "--widen-draft-from"));
    return writeOutputFile(
        async () => {
            await mkdir(options.out, {recursive: true});
            const written = [
                await widenLlamaModel({
                    source: options.widenFrom,
                    shape: options.targetShape,
                    outputPath: join(options.out, "target.gguf"),
                    weightType: options.weightType,
                    perturb: options.perturb,
                    seed: options.seed,
                    fields: {source: "--widen-from", shape: "--target-shape", perturb: "--perturb"}
                })
            ];
            if (options.widenDraftFrom !== undefined && draftShape !== undefined)
                written.push(
                    await widenLlamaModel({
                        source: options.widenDraftFrom,
                        shape: draftShape,
                        outputPath: join(options.out, "draft.gguf"),
                        weightType: options.weightType,
                        fields: {source: "--widen-draft-from", shape: "--draft-shape"}
                    })
                );
            return written;
        },
        options.out,
        "--out"
    );
}

function ownShape(path: string, field: string): WidenedShape {
    const source = readSourceHyperparameters(GgufReader.readHeader(path), field);
    return {
        embeddingLength: source.embeddingLength,
        blockCount: source.blockCount,
        headCount: source.headCount,
        feedForwardLength: source.feedForwardLength
    };
}

/** One line per file: path, shape, parameters, size. */
export function describeWidened(model: WidenedLlamaModel): string {
    const h = model.shape;
    const billions = (model.parameterCount / 1e9).toFixed(3);
    const megabytes = (model.fileBytes / 1e6).toFixed(1);
    return `${model.path}: d ${h.embeddingLength}, ${h.blockCount} layers, ${h.headCount} heads (${h.headCountKv} kv), ff ${h.feedForwardLength}; ${billions}B parameters, ${megabytes} MB`;
}
