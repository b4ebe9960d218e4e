import {mkdtemp, readFile, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import type {Token} from "node-llama-cpp";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {sharedLlama} from "../../backend/NodeLlamaCppBackend.js";
import {ByteTokenizer} from "../../gguf/ByteTokenizer.js";
import {corpusMixturePresets} from "../corpus/CorpusMixture.js";
import {writeCorpus} from "../corpus/writeCorpus.js";
import {initializeLlamaWeights} from "../model/initializeLlamaWeights.js";
import {headDimension} from "../model/LlamaConfig.js";
import {llamaForward} from "../model/llamaForward.js";
import {readLlamaGguf} from "../model/readLlamaGguf.js";
import {RopeTable} from "../model/RopeTable.js";
import {llamaCppToolExists} from "./locateLlamaCppTool.js";
import {shapeConfig} from "./ModelShape.js";
import {trainWithLlamaFinetune} from "./trainWithLlamaFinetune.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/**
 * A real llama-finetune run (a few seconds) where scripts/buildLlamaCppTools.sh has built it; CI has
 * no binary and skips it (trainCommand.test.ts checks the missing-binary error there).
 */
describe.runIf(llamaCppToolExists("llama-finetune"))("trainWithLlamaFinetune (llama-finetune present)", () => {
    let directory: string;
    beforeAll(async () => {
        directory = await mkdtemp(join(tmpdir(), "specgate-finetune-"));
        await writeCorpus(join(directory, "corpus"), {
            seed: 3,
            samples: 400,
            mixture: corpusMixturePresets["balanced"],
            testProblemsPerTask: 2
        });
    });
    afterAll(async () => {
        await rm(directory, {recursive: true, force: true});
    });

    it("with a time budget, measures its windows per second on a probe run and trains as many windows as fit", async () => {
        const out = join(directory, "budget.gguf");
        const messages: string[] = [];
        const report = await trainWithLlamaFinetune({
            corpus: join(directory, "corpus"),
            out,
            shape: {embeddingLength: 32, blockCount: 1, headCount: 2, feedForwardLength: 64},
            contextLength: 64,
            seconds: 20,
            epochs: 1,
            seed: 5,
            threads: 1,
            validationDocuments: 60,
            onMessage: (message) => messages.push(message)
        });
        expect(report.calibration?.windowsPerSecond).toBeGreaterThan(0);
        expect(report.steps).toBeGreaterThan(0);
        expect(report.history).toHaveLength(1);
        expect(messages[0]).toMatch(/^calibration: [\d.]+ windows\/s .* windows per epoch fit 20 s$/);
        expect(messages[1]).toMatch(/^training /);
    });

    it("trains, lowers the loss, and writes a GGUF whose llama.cpp logits match the reference forward", async () => {
        const out = join(directory, "tiny.gguf");
        const report = await trainWithLlamaFinetune({
            corpus: join(directory, "corpus"),
            out,
            shape: {embeddingLength: 32, blockCount: 1, headCount: 2, feedForwardLength: 64},
            contextLength: 64,
            steps: 120,
            epochs: 2,
            learningRate: 2e-3,
            seed: 5,
            threads: 1,
            validationDocuments: 60
        });
        expect(report.steps).toBeGreaterThanOrEqual(120);
        expect(report.history).toHaveLength(2);
        // From ln 260 ≈ 5.56 at random weights; 120 steps on byte-level text get well below.
        expect(report.finalValidationLoss).toBeLessThan(4);
        expect(report.history[1].trainLoss).toBeLessThan(report.history[0].trainLoss);
        expect(JSON.parse(await readFile(`${out}.train.json`, "utf8"))).toMatchObject({trainer: "llama-finetune", steps: report.steps});

        // Parity: the trained weights, read back, through the float64 reference vs llama.cpp F32.
        const {config, weights} = readLlamaGguf(out);
        // Every matrix learnt (scripts/llama-finetune-training-graph.patch): unpatched, token_embd stayed at its
        // initialisation and attn_k/attn_v moved only by the weight-decay shrink (≈ 0.2% here).
        const initial = initializeLlamaWeights(shapeConfig({embeddingLength: 32, blockCount: 1, headCount: 2, feedForwardLength: 64}, 64), {
            seed: 5
        });
        for (const name of ["token_embd.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight", "blk.0.attn_q.weight", "output.weight"]) {
            const before = initial.get(name)!;
            const after = weights.get(name)!;
            let change = 0;
            let size = 0;
            for (let index = 0; index < before.length; index++) {
                change += (after[index] - before[index]) ** 2;
                size += before[index] ** 2;
            }
            expect(Math.sqrt(change / size), name).toBeGreaterThan(0.05);
        }
        const tokens = [ByteTokenizer.bosId, ...new ByteTokenizer().tokenize("Question: Tom has 7 apples.\nAnswer: 7 + 8 = 15\n#### 15")];
        const reference = llamaForward(
            config,
            weights,
            new RopeTable(config.contextLength, headDimension(config), config.ropeFreqBase),
            tokens
        ).logits;
        const model = await (await sharedLlama()).loadModel({modelPath: out, gpuLayers: 0});
        try {
            const context = await model.createContext({
                contextSize: tokens.length + 1,
                batchSize: tokens.length,
                threads: {ideal: 1, min: 1},
                sequences: 1,
                flashAttention: false,
                experimentalKvCacheKeyType: "F32",
                experimentalKvCacheValueType: "F32"
            });
            const results = await context
                .getSequence()
                .controlledEvaluate(tokens.map((token) => [token as Token, {generateNext: {logits: true, options: {temperature: 0}}}]));
            let difference = 0;
            let magnitude = 0;
            results.forEach((result, position) => {
                for (const [token, logit] of result?.next.logits ?? []) {
                    const expected = reference[position * config.vocabularySize + token];
                    difference = Math.max(difference, Math.abs(logit - expected));
                    magnitude = Math.max(magnitude, Math.abs(expected));
                }
            });
            await context.dispose();
            expect(magnitude).toBeGreaterThan(1);
            // The same float32 bound as llamaParity.test.ts.
            expect(difference).toBeLessThan(1e-5 * (1 + magnitude));
        } finally {
            await model.dispose();
        }
    });
});
