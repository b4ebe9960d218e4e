import {mkdtemp, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {ByteTokenizer} from "../../gguf/ByteTokenizer.js";
import {initializeLlamaWeights} from "../model/initializeLlamaWeights.js";
import {headDimension} from "../model/LlamaConfig.js";
import {llamaLossAndGradients} from "../model/llamaLossAndGradients.js";
import {readLlamaGguf} from "../model/readLlamaGguf.js";
import {RopeTable} from "../model/RopeTable.js";
import {writeLlamaGguf} from "../model/writeLlamaGguf.js";
import {llamaCppToolPath, llamaCppToolExists} from "./locateLlamaCppTool.js";
import {shapeConfig} from "./ModelShape.js";
import {runLlamaFinetune} from "./runLlamaFinetune.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/**
 * The golden gradient test of the foundry's trainer: one plain SGD step of the patched llama-finetune
 * (weight decay 0, one training window) moves every weight by exactly −learning rate × the float64
 * reference gradient of that window. It is what rules out the trainer when a model fails to learn a
 * skill (the copy probe in models/README.md): llama-finetune computes the true gradient of every
 * matrix, attention included. Needs the locally built binary (scripts/buildLlamaCppTools.sh).
 */
describe.runIf(llamaCppToolExists("llama-finetune"))("llama-finetune's gradient equals the reference gradient", () => {
    let directory: string;
    beforeAll(async () => {
        directory = await mkdtemp(join(tmpdir(), "specgate-gradient-"));
    });
    afterAll(async () => {
        await rm(directory, {recursive: true, force: true});
    });

    it("one SGD step = −lr × ∇loss for every tensor (cosine > 0.99999, norm within 0.1%)", async () => {
        // llama.cpp pads the context to a multiple of 256, so the window is 256 tokens.
        const config = shapeConfig({embeddingLength: 32, blockCount: 2, headCount: 2, feedForwardLength: 64}, 256);
        const initial = initializeLlamaWeights(config, {seed: 9});
        const tokenizer = new ByteTokenizer();
        const before = join(directory, "before.gguf");
        await writeLlamaGguf(before, config, initial, tokenizer, {name: "gradient probe"});
        // 560 ASCII bytes + BOS: (561 − 257) / 128 = 2 windows; validation split 0.5 trains on the first alone.
        const document =
            'Repeat: 417 Paris 8\nEcho: 417 Paris 8\n\nRequest: Set a timer for 44 minutes.\nCall: {"name":"set_timer","arguments":{"minutes":44}}\n\n';
        const text = document.repeat(6).slice(0, 560);
        const textFile = join(directory, "text.txt");
        await writeFile(textFile, text);
        const after = join(directory, "after.gguf");
        const learningRate = 0.1;
        await runLlamaFinetune({
            binary: llamaCppToolPath("llama-finetune"),
            model: before,
            textFile,
            output: after,
            contextLength: 256,
            microBatch: 256,
            epochs: 1,
            learningRate,
            minimumLearningRate: learningRate,
            weightDecay: 0,
            validationSplit: 0.5,
            threads: 1,
            seed: 1,
            optimizer: "sgd"
        });

        const tokens = [ByteTokenizer.bosId, ...tokenizer.tokenize(text)].slice(0, 257);
        const {gradients} = llamaLossAndGradients(config, initial, new RopeTable(256, headDimension(config), config.ropeFreqBase), [
            {tokens}
        ]);
        const trained = readLlamaGguf(after).weights;
        for (const [name, gradient] of gradients) {
            const start = initial.get(name)!;
            const end = trained.get(name)!;
            let dot = 0;
            let stepSquared = 0;
            let gradientSquared = 0;
            for (let index = 0; index < gradient.length; index++) {
                const step = (start[index] - end[index]) / learningRate;
                dot += step * gradient[index];
                stepSquared += step * step;
                gradientSquared += gradient[index] ** 2;
            }
            expect(gradientSquared, name).toBeGreaterThan(0);
            expect(dot / Math.sqrt(stepSquared * gradientSquared), name).toBeGreaterThan(0.99999);
            expect(Math.abs(Math.sqrt(stepSquared / gradientSquared) - 1), name).toBeLessThan(1e-3);
        }
    }, 120_000);
});
