/**
 * Engine benchmark: on a generated fixture pair whose target is large enough for
 * llama.cpp's CPU matmuls to be dominated by weight reads, compare in ONE process and run:
 * target-only, greedy / strict / fuzzy / calibrated verification at γ = 1, 4, 8, and node-llama-cpp's
 * own DraftSequenceTokenPredictor — at temperature 0 and 0.8. Prints the cost curve t_target(k) and
 * the bench tables; writes everything to .specgate/bench/engine.json.
 *
 *   npm run bench:engine                 # full run (~10 minutes on 2 cores)
 *   npm run bench:engine -- --quick      # γ = 4 only, fewer tokens
 */
import {mkdir} from "node:fs/promises";
import {NodeLlamaCppBackend} from "../src/backend/NodeLlamaCppBackend.js";
import {defaultBenchPrompts} from "../src/benchRunner/defaultPrompts.js";
import {formatBenchTable, runBench, type BenchRow} from "../src/benchRunner/runBench.js";
import {samplingOptionsSchema} from "../src/distributions/SamplingOptions.js";
import {runDraftSequencePredictor} from "../src/engine/predictor/runDraftSequencePredictor.js";
import {GgmlTensorType} from "../src/gguf/GgmlTensorType.js";
import {writeRandomLlamaPair} from "../src/gguf/randomLlamaModel.js";
import {writeJsonOutput} from "../src/cli/writeJsonOutput.js";
import {parsePolicySpec} from "../src/policies/parsePolicySpec.js";

const quick = process.argv.includes("--quick");
const gammas = quick ? [4] : [1, 4, 8];
const maxTokens = quick ? 32 : 64;
const threads = 1;
const directory = ".specgate/bench/fixture";
await mkdir(directory, {recursive: true});

// Target: d = 768, 8 blocks, F32 (226 MB of weights: every token streams them from memory).
// Draft: d = 128, 2 blocks (0.6 MB), a noisy slice of the target. tailScale/draftNoise/residualScale
// are set so the draft approximates the target about as well as a same-family draft does a real
// target (≈ 2.1 accepted tokens per γ = 4 step, α ≈ 0.72, measured on three prompts); with the
// generator's defaults a 128-wide slice of a 768-wide target gives α ≈ 0.37.
const shape = {
    target: {embeddingLength: 768, blockCount: 8, headCount: 12, headCountKv: 12, feedForwardLength: 2048, contextLength: 512},
    draft: {embeddingLength: 128, blockCount: 2, headCount: 2, headCountKv: 2, feedForwardLength: 384, contextLength: 512}
};
const pair = await writeRandomLlamaPair({
    directory,
    seed: 1,
    weightType: GgmlTensorType.F32,
    tailScale: 0.05,
    draftNoise: 0.05,
    residualScale: 0.1,
    ...shape
});
const target = await NodeLlamaCppBackend.load(pair.targetPath, {threads});
const draft = await NodeLlamaCppBackend.load(pair.draftPath, {threads});

// Cost curve t_target(k), k = 1..9 tokens with logits at every position, median of 9.
const sequence = await target.createSequence();
await sequence.evaluate(target.tokenize("Once upon a time, in a small village by the sea,"), {positions: []});
const curve: Record<number, number> = {};
for (const k of [1, 2, 3, 5, 9]) {
    const times: number[] = [];
    for (let repeat = 0; repeat < 9; repeat++) {
        const tokens = Array.from({length: k}, (_value, index) => 70 + index);
        const start = performance.now();
        await sequence.evaluate(tokens, {positions: tokens.map((_token, index) => index)});
        times.push(performance.now() - start);
        await sequence.rollback(k);
    }
    curve[k] = times.sort((a, b) => a - b)[4];
}
await sequence.dispose();
process.stdout.write(
    `cost curve (ms, target, logits at every position): ${Object.entries(curve)
        .map(([k, ms]) => `t(${k}) = ${ms.toFixed(2)}`)
        .join(", ")}\n\n`
);

const policies = ["greedy", "strict", "fuzzy:js:0.4", "calibrated"].map((spec) => parsePolicySpec(spec));
const results: Record<string, BenchRow[]> = {};
for (const temperature of [0, 0.8]) {
    const sampling = samplingOptionsSchema.parse({temperature});
    const extraPaths = gammas.map((gamma) => ({
        label: `node-llama-cpp predictor γ=${gamma}`,
        run: async (prompt: string, seed: number) => {
            const run = await runDraftSequencePredictor({
                target: pair.targetPath,
                draft: pair.draftPath,
                prompt,
                maxTokens,
                temperature,
                seed,
                predictor: {maxTokens: gamma},
                threads
            });
            return {tokens: run.tokens, decodeMilliseconds: run.elapsedMilliseconds};
        }
    }));
    const rows = await runBench({
        target,
        draft,
        prompts: defaultBenchPrompts,
        policies,
        gammas,
        sampling,
        maxTokens,
        seed: 0,
        extraPaths,
        onProgress: (done, total, label) => process.stderr.write(`\r\x1b[K${done}/${total} T=${temperature} ${label}`)
    });
    process.stderr.write("\r\x1b[K");
    results[`temperature ${temperature}`] = rows;
    process.stdout.write(`### temperature ${temperature}\n\n${formatBenchTable(rows)}\n`);
}
await writeJsonOutput(".specgate/bench/engine.json", {
    date: new Date().toISOString(),
    node: process.version,
    threads,
    shape,
    maxTokens,
    costCurveMilliseconds: curve,
    results
});
await draft.dispose();
await target.dispose();
