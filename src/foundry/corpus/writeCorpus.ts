import {createHash} from "node:crypto";
import {mkdir} from "node:fs/promises";
import {join} from "node:path";
import {writeFileAtomic} from "../../io/writeFileAtomic.js";
import type {CorpusMixture} from "./CorpusMixture.js";
import {
    type CorpusLanguage,
    corpusLanguages,
    type CorpusSample,
    type CorpusSplit,
    corpusSplits,
    type CorpusTask,
    corpusTasks
} from "./CorpusSample.js";
import {type CorpusOptions, generateCorpus} from "./generateCorpus.js";

export interface CorpusFileEntry {
    readonly bytes: number;
    readonly documents: number;
    readonly sha256: string;
}

export interface CorpusManifest {
    readonly format: "specgate-corpus/1";
    readonly seed: number;
    readonly samples: number;
    readonly testProblemsPerTask: number;
    readonly mixture: CorpusMixture;
    /** Documents per task × language × split; languages a task is not rendered in are left out. */
    readonly counts: Record<CorpusTask, Partial<Record<CorpusLanguage, Record<CorpusSplit, number>>>>;
    readonly files: Record<string, CorpusFileEntry>;
}

/** Documents in train.txt / validation.txt are separated by one blank line (no document contains one). */
export const documentSeparator = "\n\n";

/**
 * Writes a corpus to `directory`: train.txt and validation.txt (plain text, one document per
 * blank-line-separated block, the form llama.cpp's llama-finetune and our trainer read), test.jsonl
 * and validation.jsonl (one scoring item per line: id, task, language, prompt, reference, scorer
 * "numeric" for arithmetic, metadata {problemId, answer}: specgate batteries as they stand) and
 * manifest.json (options, counts per task × language × split, size and SHA-256 of each file).
 * Every file is written atomically; the same options give byte-identical files.
 */
export async function writeCorpus(directory: string, options: CorpusOptions): Promise<CorpusManifest> {
    const corpus = generateCorpus(options);
    await mkdir(directory, {recursive: true});
    const contents: Record<string, {text: string; documents: number}> = {
        "train.txt": {text: blocks(corpus.train), documents: corpus.train.length},
        "validation.txt": {text: blocks(corpus.validation), documents: corpus.validation.length},
        "validation.jsonl": {text: scoringItems(corpus.validation), documents: corpus.validation.length},
        "test.jsonl": {text: scoringItems(corpus.test), documents: corpus.test.length}
    };
    const files: Record<string, CorpusFileEntry> = {};
    for (const [name, {text, documents}] of Object.entries(contents)) {
        const bytes = Buffer.from(text, "utf8");
        await writeFileAtomic(join(directory, name), bytes);
        files[name] = {bytes: bytes.length, documents, sha256: createHash("sha256").update(bytes).digest("hex")};
    }
    const manifest: CorpusManifest = {
        format: "specgate-corpus/1",
        seed: options.seed,
        samples: options.samples,
        testProblemsPerTask: options.testProblemsPerTask ?? 50,
        mixture: options.mixture,
        counts: countSamples([...corpus.train, ...corpus.validation, ...corpus.test]),
        files
    };
    await writeFileAtomic(join(directory, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
    return manifest;
}

/**
 * One scoring item per line. validation.jsonl holds the validation documents in this form: held-out
 * problems disjoint from test, for tuning on the family (s-CDF's training pool, calibration) without
 * touching the test split.
 */
function scoringItems(samples: readonly CorpusSample[]): string {
    return samples
        .map(
            (item) =>
                `${JSON.stringify({
                    id: item.id,
                    task: item.task,
                    language: item.language,
                    prompt: item.prompt,
                    reference: item.reference,
                    // Battery-ready (`--battery test.jsonl`): arithmetic answers end in "#### N", scored by their
                    // final number; every other task's reference is the whole answer, the loader's exact-match default.
                    ...(item.task === "arithmetic" ? {scorer: "numeric"} : {}),
                    metadata: {problemId: item.problemId, answer: item.answer}
                })}\n`
        )
        .join("");
}

function blocks(samples: readonly CorpusSample[]): string {
    return samples.length === 0 ? "" : `${samples.map((item) => item.text).join(documentSeparator)}\n`;
}

function countSamples(samples: readonly CorpusSample[]): CorpusManifest["counts"] {
    const counts = Object.fromEntries(corpusTasks.map((task) => [task, {}])) as CorpusManifest["counts"];
    for (const item of samples) {
        const byLanguage = counts[item.task];
        byLanguage[item.language] ??= {train: 0, validation: 0, test: 0};
        byLanguage[item.language]![item.split]++;
    }
    // Fixed key order, so the manifest bytes do not depend on which document came first.
    for (const task of corpusTasks)
        counts[task] = Object.fromEntries(
            corpusLanguages
                .filter((language) => counts[task][language] !== undefined)
                .map((language) => [language, Object.fromEntries(corpusSplits.map((split) => [split, counts[task][language]![split]]))])
        ) as CorpusManifest["counts"][CorpusTask];
    return counts;
}
