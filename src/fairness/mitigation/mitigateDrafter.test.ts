import {createHash} from "node:crypto";
import {mkdtemp, readFile, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {NodeLlamaCppBackend} from "../../backend/NodeLlamaCppBackend.js";
import type {BatteryItem} from "../../batteries/BatteryItem.js";
import {ModelLoadError, InsufficientDataError, SingleGroupError, TokenizerMismatchError, UnknownLanguageError} from "../../errors.js";
import {readLlamaGguf} from "../../foundry/model/readLlamaGguf.js";
import {GgmlTensorType} from "../../gguf/GgmlTensorType.js";
import {GgufReader} from "../../gguf/GgufReader.js";
import {GgufWriter} from "../../gguf/GgufWriter.js";
import {type RandomLlamaPair, writeRandomLlamaPair} from "../../gguf/randomLlamaModel.js";
import {buildDistillationSet, type DistillationGroup} from "./buildDistillationSet.js";
import {defaultMitigationOptions} from "./MitigationState.js";
import {mitigateDrafter} from "./mitigateDrafter.js";
import {readTrainableDrafter} from "./readTrainableDrafter.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

let directory: string;
let pair: RandomLlamaPair;
let target: NodeLlamaCppBackend;
let groups: DistillationGroup[];

const item = (id: string, language: string, prompt: string): BatteryItem => ({id, task: "chat", language, prompt, scorer: "none"});
const items: BatteryItem[] = [
    item("en-1", "en", "The cat sat on the"),
    item("en-2", "en", "One, two, three,"),
    item("en-3", "en", "Hello there, how"),
    item("ja-1", "ja", "猫がいます。"),
    item("ja-2", "ja", "こんにちは、元気"),
    item("ja-3", "ja", "一、二、三、")
];
const sha256 = async (path: string) =>
    createHash("sha256")
        .update(await readFile(path))
        .digest("hex");

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-mitigate-"));
    pair = await writeRandomLlamaPair({directory, seed: 17});
    target = await NodeLlamaCppBackend.load(pair.targetPath, {threads: 1});
    groups = await buildDistillationSet(target, items, {by: "language", maxTokens: 6, contextSize: 256, seed: 3});
});
afterAll(async () => {
    await target?.dispose();
    await rm(directory, {recursive: true, force: true});
});

describe("buildDistillationSet", () => {
    it("keeps the target's greedy continuation with its full-support rows on continuation positions only", () => {
        expect(groups.map((group) => [group.name, group.sequences.length])).toEqual([
            ["en", 3],
            ["ja", 3]
        ]);
        for (const sequence of groups.flatMap((group) => group.sequences)) {
            expect(sequence.continuation).toBe("target-output");
            const scored = sequence.lossWeights.filter((weight) => weight === 1).length;
            expect(scored).toBe(sequence.positions);
            // The scored positions are the last ones: the continuation, not the prompt.
            expect(sequence.lossWeights.slice(-sequence.positions).every((weight) => weight === 1)).toBe(true);
            sequence.targetDistributions.forEach((row, position) => {
                expect(row === undefined).toBe(sequence.lossWeights[position] === 0);
                if (row !== undefined) expect(row.reduce((sum, value) => sum + value, 0)).toBeCloseTo(1, 9);
            });
            expect(sequence.tokens[0]).toBe(target.bosToken);
        }
    });

    it("samples the target's continuations, references ignored, with continuations target-sampled (Disparate Impacts paper D.1)", async () => {
        const withReferences = items.map((entry) => ({...entry, reference: "a reference the sampled set must not use"}));
        const sampled = await buildDistillationSet(target, withReferences, {
            by: "language",
            maxTokens: 6,
            contextSize: 256,
            seed: 3,
            continuations: "target-sampled"
        });
        const sequences = sampled.flatMap((group) => group.sequences);
        expect(sequences.every((sequence) => sequence.continuation === "target-output")).toBe(true);
        // Same items and seeds as the greedy set above: temperature-1 draws differ from the argmax path somewhere.
        const greedy = groups.flatMap((group) => group.sequences);
        expect(sequences.some((sequence, index) => sequence.tokens.join(",") !== greedy[index].tokens.join(","))).toBe(true);
        const byDefault = await buildDistillationSet(target, withReferences, {by: "language", maxTokens: 6, contextSize: 256, seed: 3});
        expect(byDefault.flatMap((group) => group.sequences).every((sequence) => sequence.continuation === "reference")).toBe(true);
    });

    it("skips an item whose prompt does not fit the drafter's context with maxTokens, never cutting it, and names it", async () => {
        const skipped: string[] = [];
        const long = item("en-long", "en", "The cat sat on the mat. ".repeat(40));
        const set = await buildDistillationSet(target, [...items, long], {
            by: "language",
            maxTokens: 6,
            contextSize: 64,
            seed: 3,
            onSkipped: (id) => skipped.push(id)
        });
        expect(skipped).toEqual(["en-long"]);
        expect(set.map((group) => [group.name, group.sequences.length])).toEqual([
            ["en", 3],
            ["ja", 3]
        ]);
        // A group none of whose items fits: nothing to distil for it.
        await expect(
            buildDistillationSet(target, [items[0], long], {by: "language", maxTokens: 6, contextSize: 64, seed: 3})
        ).rejects.toThrow(SingleGroupError);
        await expect(
            buildDistillationSet(target, [items[0], {...long, language: "ja"}], {by: "language", maxTokens: 6, contextSize: 64, seed: 3})
        ).rejects.toThrow(InsufficientDataError);
    });

    it("refuses a battery with a single group or an unknown language tag", async () => {
        await expect(
            buildDistillationSet(
                target,
                items.filter((entry) => entry.language === "en"),
                {by: "language", maxTokens: 4, contextSize: 256, seed: 0}
            )
        ).rejects.toThrow(SingleGroupError);
        await expect(
            buildDistillationSet(target, [...items, item("xx-1", "xx-nope", "hm")], {
                by: "language",
                maxTokens: 4,
                contextSize: 256,
                seed: 0
            })
        ).rejects.toThrow(UnknownLanguageError);
    });
});

describe("mitigateDrafter", () => {
    it("lowers U on the distillation set, writes a drafter node-llama-cpp loads, and never touches the target", async () => {
        const targetHash = await sha256(pair.targetPath);
        const draftHash = await sha256(pair.draftPath);
        const outputPath = join(directory, "mitigated.gguf");
        const steps: number[] = [];
        const result = await mitigateDrafter({
            drafterPath: pair.draftPath,
            outputPath,
            targetVocabularySize: target.vocabularySize,
            groups,
            options: {...defaultMitigationOptions, method: "scdf", steps: 12, batchPerTask: 2, learningRate: 1e-2, warmupSteps: 1, seed: 4},
            onStep: (record) => steps.push(record.step)
        });
        expect(steps).toEqual(Array.from({length: 12}, (_value, index) => index + 1));
        expect(result.objectiveBefore).toBeGreaterThan(1e-4);
        expect(result.objectiveAfter).toBeLessThan(result.objectiveBefore * 0.8);
        // Every step's best mini-batch group got weight 0.
        for (const record of result.steps) expect(record.weights[record.divergences.indexOf(Math.min(...record.divergences))]).toBe(0);
        expect(await sha256(pair.targetPath)).toBe(targetHash);
        expect(await sha256(pair.draftPath)).toBe(draftHash);

        const written = await NodeLlamaCppBackend.load(outputPath, {threads: 1});
        try {
            expect(written.vocabularyIdentity()).toBe(target.vocabularyIdentity());
            const sequence = await written.createSequence();
            const [row] = await sequence.evaluate([1, 70, 71]);
            expect(row.every((value) => Number.isFinite(value))).toBe(true);
            await sequence.dispose();
        } finally {
            await written.dispose();
        }
        const reader = GgufReader.readHeader(outputPath);
        expect(reader.metadata.get("general.file_type")?.value).toBe(0);
        const original = readLlamaGguf(pair.draftPath).weights.get("output.weight")!;
        const trained = readLlamaGguf(outputPath).weights.get("output.weight")!;
        expect(trained.some((value, index) => value !== original[index])).toBe(true);
    });

    it("reads a Q8_0 drafter and rejects a non-llama file or a vocabulary other than the target's", async () => {
        const quantized = await writeRandomLlamaPair({
            directory: await mkdtemp(join(directory, "q8-")),
            seed: 17,
            weightType: GgmlTensorType.Q8_0
        });
        expect(readTrainableDrafter(quantized.draftPath, target.vocabularySize).config.vocabularySize).toBe(target.vocabularySize);
        expect(() => readTrainableDrafter(pair.draftPath, target.vocabularySize + 1)).toThrow(TokenizerMismatchError);
        const gpt2 = join(directory, "gpt2.gguf");
        await new GgufWriter()
            .setString("general.architecture", "gpt2")
            .addTensor("x", [2], GgmlTensorType.F32, new Float32Array(2))
            .writeFile(gpt2);
        expect(() => readTrainableDrafter(gpt2, target.vocabularySize)).toThrow(ModelLoadError);
        expect(() => readTrainableDrafter(gpt2, target.vocabularySize)).toThrow(
            /^drafterPath: .*cannot be fine-tuned by the reference llama model: .*expected a llama model, found gpt2/
        );
    });
});
