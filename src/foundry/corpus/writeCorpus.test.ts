import {loadJsonlBattery} from "../../batteries/loadJsonlBattery.js";
import {createHash} from "node:crypto";
import {mkdtemp, readFile, readdir, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {corpusMixturePresets} from "./CorpusMixture.js";
import {type CorpusManifest, documentSeparator, writeCorpus} from "./writeCorpus.js";

let directory: string;
beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-corpus-"));
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

async function sha256(path: string): Promise<string> {
    return createHash("sha256")
        .update(await readFile(path))
        .digest("hex");
}

/** The answer a scoring item carries in its metadata. */
function answerOf(item: Record<string, unknown>): string {
    return (item.metadata as {answer: string}).answer;
}

describe("writeCorpus", () => {
    it("writes byte-identical files for the same seed and different ones for another seed", async () => {
        const options = {seed: 3, samples: 800, mixture: corpusMixturePresets["balanced"], testProblemsPerTask: 10};
        await writeCorpus(join(directory, "a"), options);
        await writeCorpus(join(directory, "b"), options);
        await writeCorpus(join(directory, "c"), {...options, seed: 4});
        const names = ["train.txt", "validation.txt", "validation.jsonl", "test.jsonl", "manifest.json"];
        expect((await readdir(join(directory, "a"))).sort()).toEqual([...names].sort());
        for (const name of names) expect(await sha256(join(directory, "a", name))).toBe(await sha256(join(directory, "b", name)));
        expect(await sha256(join(directory, "a", "train.txt"))).not.toBe(await sha256(join(directory, "c", "train.txt")));
    });

    it("writes a manifest whose counts and checksums match the files", async () => {
        const target = join(directory, "manifest");
        const returned = await writeCorpus(target, {
            seed: 5,
            samples: 600,
            mixture: corpusMixturePresets["english-heavy"],
            testProblemsPerTask: 8
        });
        const manifest = JSON.parse(await readFile(join(target, "manifest.json"), "utf8")) as CorpusManifest;
        expect(manifest).toEqual(JSON.parse(JSON.stringify(returned)));

        const train = await readFile(join(target, "train.txt"), "utf8");
        const validation = await readFile(join(target, "validation.txt"), "utf8");
        const test = (await readFile(join(target, "test.jsonl"), "utf8"))
            .trimEnd()
            .split("\n")
            .map((line) => JSON.parse(line) as Record<string, unknown>);
        const total = (split: "train" | "validation" | "test"): number =>
            Object.values(manifest.counts)
                .flatMap((byLanguage) => Object.values(byLanguage))
                .reduce((sum, counts) => sum + counts[split], 0);
        expect(train.trimEnd().split(documentSeparator)).toHaveLength(total("train"));
        expect(validation.trimEnd().split(documentSeparator)).toHaveLength(total("validation"));
        expect(total("train") + total("validation")).toBe(600);
        expect(test).toHaveLength(total("test"));
        expect(manifest.files["train.txt"]).toEqual({
            bytes: Buffer.byteLength(train),
            documents: total("train"),
            sha256: await sha256(join(target, "train.txt"))
        });
        expect(Object.keys(test[0]).sort()).toEqual(["id", "language", "metadata", "prompt", "reference", "scorer", "task"]);
        expect(test.filter((item) => item.task !== "arithmetic").every((item) => item.scorer === undefined)).toBe(true);
        // validation.jsonl is validation.txt as scoring items: same documents, in the same order, none from a test problem.
        const validationItems = (await readFile(join(target, "validation.jsonl"), "utf8"))
            .trimEnd()
            .split("\n")
            .map((line) => JSON.parse(line) as Record<string, unknown>);
        expect(validationItems.map((item) => item.prompt + answerOf(item))).toEqual(validation.trimEnd().split(documentSeparator));
        // (Stories share opening prompts across problems; whole documents never repeat across splits.)
        const testDocuments = new Set(test.map((item) => `${item.task}/${item.prompt}${answerOf(item)}`));
        expect(validationItems.some((item) => testDocuments.has(`${item.task}/${item.prompt}${answerOf(item)}`))).toBe(false);
        // Both files load as batteries as they stand.
        expect((await loadJsonlBattery(join(target, "test.jsonl"))).length).toBe(test.length);
        expect(
            (await loadJsonlBattery(join(target, "validation.jsonl")))
                .filter((item) => item.scorer === "numeric")
                .every((item) => item.task === "arithmetic")
        ).toBe(true);
        expect(Object.keys(manifest.counts.arithmetic)).toEqual(["en", "es", "de", "ja"]);
        expect(Object.keys(manifest.counts.safety)).toEqual(["en"]);
        // The test split is parallel whatever the mixture.
        expect(manifest.counts.arithmetic.ja!.test).toBe(manifest.counts.arithmetic.en!.test);
        expect(manifest.counts.arithmetic.en!.train).toBeGreaterThan(5 * manifest.counts.arithmetic.ja!.train);
    });
});
