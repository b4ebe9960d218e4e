import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import type {LlamaModel, Token} from "node-llama-cpp";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {NodeLlamaCppBackend, sharedLlama} from "../../backend/NodeLlamaCppBackend.js";
import {ByteTokenizer} from "../../gguf/ByteTokenizer.js";
import {corpusMixturePresets} from "../corpus/CorpusMixture.js";
import {generateCorpus} from "../corpus/generateCorpus.js";
import {initializeLlamaWeights} from "./initializeLlamaWeights.js";
import {type LlamaConfig, headDimension} from "./LlamaConfig.js";
import {llamaForward} from "./llamaForward.js";
import type {LlamaWeights} from "./LlamaWeights.js";
import {RopeTable} from "./RopeTable.js";
import {writeLlamaGguf} from "./writeLlamaGguf.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/**
 * The golden parity test: the reference forward pass (float64, weights rounded to float32) against
 * llama.cpp on the F32 GGUF that writeLlamaGguf exports. Agreement to float32 precision proves the
 * export (tensor names, layouts, metadata) and the maths (RMSNorm, RoPE pair order, grouped-query
 * head mapping, attention scale, SwiGLU, tied output) are llama.cpp's.
 *
 * Tolerances, relative to the largest logit magnitude M of the batch:
 * - F32 path (F32 KV cache, no flash attention): every llama.cpp operation rounds to float32
 *   (u = 2^-24 ≈ 6e-8); through dot products of ≤ 96 terms, 2 blocks and the softmaxes the error
 *   stays within a few hundred u of M. Bound 1e-5·(1 + M); observed 6e-7 to 1.3e-6 at M ≈ 3.1–4.1. A wrong
 *   convention is nowhere near: NEOX-ordered RoPE pairs differ by ~2 logits.
 * - The project's NodeLlamaCppBackend (node-llama-cpp defaults: F16 KV cache, flash attention, whose
 *   CPU kernel also rounds the queries to F16 and accumulates values in F16): F16 keeps 11
 *   significant bits (u = 2^-11 ≈ 4.9e-4), so errors of a few u of M. Bound 4e-3·(1 + M); observed 6e-4 to 6.4e-3.
 */
const byteTokenizer = new ByteTokenizer();

const groupedQuery: LlamaConfig = {
    vocabularySize: byteTokenizer.size,
    embeddingLength: 64,
    blockCount: 2,
    headCount: 4,
    headCountKv: 2,
    feedForwardLength: 96,
    contextLength: 128,
    rmsNormEpsilon: 1e-5,
    ropeFreqBase: 10000,
    tiedOutput: false
};
const tiedMultiHead: LlamaConfig = {
    ...groupedQuery,
    embeddingLength: 48,
    headCount: 3,
    headCountKv: 3,
    feedForwardLength: 64,
    tiedOutput: true
};

const texts = [
    "Question: Tom has 7 apples. He buys 8 more. How many apples does Tom have now?\nAnswer: 7 + 8 = 15\n#### 15",
    "問題: けんはボールを7個持っています。8個買いました。",
    'Call: {"name":"search","arguments":{"query":"red shoes","limit":50}} 😀🚀',
    "Über Straßen läuft der Fuchs; ¿qué tiempo hará en Lima?"
];
const sequences = texts.map((text) => [ByteTokenizer.bosId, ...byteTokenizer.tokenize(text)]);

interface Model {
    readonly config: LlamaConfig;
    readonly weights: LlamaWeights;
    readonly path: string;
}

let directory: string;
const models: Model[] = [];
beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-parity-"));
    for (const [index, config] of [groupedQuery, tiedMultiHead].entries()) {
        const weights = initializeLlamaWeights(config, {seed: 3 + index, standardDeviation: 0.1, gainJitter: 0.2});
        const path = join(directory, `model-${index}.gguf`);
        await writeLlamaGguf(path, config, weights, byteTokenizer);
        models.push({config, weights, path});
    }
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

function referenceLogits(model: Model, tokens: number[]): Float64Array {
    const rope = new RopeTable(model.config.contextLength, headDimension(model.config), model.config.ropeFreqBase);
    return llamaForward(model.config, model.weights, rope, tokens).logits;
}

/** max |llama.cpp − reference| over every position and token, and the largest |logit|. */
function compare(rows: readonly Float64Array[], reference: Float64Array, vocabulary: number): {difference: number; magnitude: number} {
    let difference = 0;
    let magnitude = 0;
    rows.forEach((row, position) => {
        expect(row.length).toBe(vocabulary);
        row.forEach((logit, token) => {
            const expected = reference[position * vocabulary + token];
            difference = Math.max(difference, Math.abs(logit - expected));
            magnitude = Math.max(magnitude, Math.abs(expected));
        });
    });
    return {difference, magnitude};
}

/** Every position's raw logits from a context with an F32 KV cache and flash attention off. */
async function float32Logits(model: LlamaModel, tokens: number[], vocabulary: number): Promise<Float64Array[]> {
    const context = await model.createContext({
        contextSize: tokens.length + 1,
        batchSize: tokens.length,
        threads: {ideal: 1, min: 1},
        sequences: 1,
        flashAttention: false,
        experimentalKvCacheKeyType: "F32",
        experimentalKvCacheValueType: "F32"
    });
    try {
        const results = await context
            .getSequence()
            .controlledEvaluate(tokens.map((token) => [token as Token, {generateNext: {logits: true, options: {temperature: 0}}}]));
        return results.map((result) => {
            const row = new Float64Array(vocabulary);
            for (const [token, logit] of result?.next.logits ?? []) row[token] = logit;
            return row;
        });
    } finally {
        await context.dispose();
    }
}

describe("reference llama forward vs llama.cpp (F32 GGUF)", () => {
    it("matches llama.cpp's F32 computation to float32 precision, grouped-query and tied models", async () => {
        expect(Math.max(...sequences.map((tokens) => tokens.length))).toBeLessThanOrEqual(groupedQuery.contextLength);
        const llama = await sharedLlama();
        for (const model of models) {
            const loaded = await llama.loadModel({modelPath: model.path, gpuLayers: 0});
            try {
                for (const tokens of sequences) {
                    const rows = await float32Logits(loaded, tokens, model.config.vocabularySize);
                    const {difference, magnitude} = compare(rows, referenceLogits(model, tokens), model.config.vocabularySize);
                    expect(magnitude).toBeGreaterThan(1); // logits that are not trivially near zero
                    expect(difference).toBeLessThan(1e-5 * (1 + magnitude));
                }
            } finally {
                await loaded.dispose();
            }
        }
    });

    it("matches the project's NodeLlamaCppBackend (F16 KV cache, flash attention) to F16 precision", async () => {
        for (const model of models) {
            const backend = await NodeLlamaCppBackend.load(model.path, {threads: 1});
            try {
                for (const tokens of sequences) {
                    const sequence = await backend.createSequence();
                    const rows = await sequence.evaluate(tokens, {positions: tokens.map((_, index) => index)});
                    await sequence.dispose();
                    const {difference, magnitude} = compare(rows, referenceLogits(model, tokens), model.config.vocabularySize);
                    expect(difference).toBeLessThan(4e-3 * (1 + magnitude));
                }
            } finally {
                await backend.dispose();
            }
        }
    });

    it("tokenizes 1,000 corpus documents and emoji strings exactly as llama.cpp does", async () => {
        const corpus = generateCorpus({seed: 2, samples: 1000, mixture: corpusMixturePresets["balanced"], testProblemsPerTask: 0});
        const strings = [...corpus.train, ...corpus.validation].map((sample) => sample.text);
        strings.push("😀🚀👩‍👩‍👧 family", "日本語とEnglishの混在テキスト", "tabs\tand\nnewlines  double  spaces ", "");
        expect(strings.length).toBeGreaterThanOrEqual(1000);
        expect(strings.some((text) => /[\u3040-\u30ff]/.test(text))).toBe(true);
        const backend = await NodeLlamaCppBackend.load(models[0].path, {threads: 1});
        try {
            for (const text of strings) expect(byteTokenizer.tokenize(text), JSON.stringify(text)).toEqual(backend.tokenize(text));
        } finally {
            await backend.dispose();
        }
    });
});
