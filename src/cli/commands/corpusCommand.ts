import type {Command} from "commander";
import {corpusMixturePresets} from "../../foundry/corpus/CorpusMixture.js";
import {parseCorpusMixture} from "../../foundry/corpus/parseCorpusMixture.js";
import {type CorpusManifest, writeCorpus} from "../../foundry/corpus/writeCorpus.js";
import {checkOutputFolder} from "../checkOutputPath.js";
import {integerOption} from "../parseIntegerOption.js";
import {writeOutputFile} from "../writeOutputFile.js";

export interface CorpusCommandOptions {
    readonly out: string;
    readonly seed: number;
    readonly samples: number;
    /** A preset name or JSON weights (see parseCorpusMixture). */
    readonly mixture: string;
    readonly testProblems: number;
}

/** Writes the corpus and returns its manifest plus a one-line summary for the terminal. */
export async function runCorpus(options: CorpusCommandOptions): Promise<{manifest: CorpusManifest; summary: string}> {
    const mixture = parseCorpusMixture(options.mixture, "--mixture");
    await checkOutputFolder(options.out, "--out");
    const manifest = await writeOutputFile(
        () => writeCorpus(options.out, {seed: options.seed, samples: options.samples, mixture, testProblemsPerTask: options.testProblems}),
        options.out,
        "--out"
    );
    const files = Object.entries(manifest.files).map(([name, entry]) => `${name} ${entry.documents} documents, ${entry.bytes} bytes`);
    return {manifest, summary: `${options.out}: ${files.join("; ")}`};
}

/** `specgate corpus`: write the seeded synthetic training corpus (train.txt, validation.txt, test.jsonl, manifest.json). */
export function registerCorpusCommand(program: Command): void {
    program
        .command("corpus")
        .description(
            "write the seeded synthetic corpus: arithmetic (en/es/de/ja), multiple choice, tool calls (en/es/de/ja), safety, stories, copy drills"
        )
        .requiredOption("--out <DIR>", "directory for train.txt, validation.txt, test.jsonl and manifest.json")
        .option("--seed <S>", "seed of the generator (the same seed writes the same corpus)", integerOption(0), 1)
        .option("--samples <N>", "train + validation documents (the test split comes on top)", integerOption(0), 20_000)
        .option(
            "--mixture <NAME|JSON>",
            `${Object.keys(corpusMixturePresets).join(", ")}, or JSON {"tasks": {...}, "languages": {...}}`,
            "balanced"
        )
        .option("--test-problems <N>", "distinct test problems per task, each in all the task's languages", integerOption(0), 50)
        .action(async (options: CorpusCommandOptions) => {
            const {summary} = await runCorpus(options);
            process.stdout.write(`${summary}\n`);
        });
}
