import {createHash} from "node:crypto";
import {mkdtemp, readFile, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {NodeLlamaCppBackend} from "../backend/NodeLlamaCppBackend.js";
import {InvalidInputError} from "../errors.js";
import {GgmlTensorType} from "./GgmlTensorType.js";
import {GgufReader} from "./GgufReader.js";
import {writeRandomLlamaPair} from "./randomLlamaModel.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

let directory: string;
beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-fixture-"));
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

async function sha256(path: string): Promise<string> {
    return createHash("sha256")
        .update(await readFile(path))
        .digest("hex");
}

function softmax(logits: Float64Array): Float64Array {
    const maximum = Math.max(...logits);
    const weights = logits.map((logit) => Math.exp(logit - maximum));
    const total = weights.reduce((sum, weight) => sum + weight, 0);
    return weights.map((weight) => weight / total);
}

async function allLogits(path: string, tokens: number[]): Promise<Float64Array[]> {
    const backend = await NodeLlamaCppBackend.load(path, {threads: 1});
    try {
        const sequence = await backend.createSequence();
        return await sequence.evaluate(tokens, {positions: tokens.map((_, index) => index)});
    } finally {
        await backend.dispose();
    }
}

describe("writeRandomLlamaPair", () => {
    it("is deterministic: the same seed gives byte-identical files, another seed different ones", async () => {
        const first = await writeRandomLlamaPair({directory: await mkdtemp(join(directory, "a-")), seed: 5});
        const second = await writeRandomLlamaPair({directory: await mkdtemp(join(directory, "b-")), seed: 5});
        const other = await writeRandomLlamaPair({directory: await mkdtemp(join(directory, "c-")), seed: 6});
        expect(await sha256(first.targetPath)).toBe(await sha256(second.targetPath));
        expect(await sha256(first.draftPath)).toBe(await sha256(second.draftPath));
        expect(await sha256(first.targetPath)).not.toBe(await sha256(other.targetPath));
        expect(await sha256(first.draftPath)).not.toBe(await sha256(other.draftPath));
    });

    it("writes the requested shapes and the llama metadata", async () => {
        const pair = await writeRandomLlamaPair({
            directory: await mkdtemp(join(directory, "shape-")),
            seed: 1,
            target: {embeddingLength: 96, blockCount: 3, headCount: 6, headCountKv: 2, feedForwardLength: 160, contextLength: 128},
            draft: {embeddingLength: 32, blockCount: 1, headCount: 2, headCountKv: 1, feedForwardLength: 64, contextLength: 128}
        });
        const header = GgufReader.readHeader(pair.targetPath);
        const value = (key: string): unknown => header.metadata.get(key)?.value;
        expect(value("general.architecture")).toBe("llama");
        expect(value("llama.embedding_length")).toBe(96);
        expect(value("llama.block_count")).toBe(3);
        expect(value("llama.attention.head_count_kv")).toBe(2);
        expect(value("llama.feed_forward_length")).toBe(160);
        expect(value("llama.context_length")).toBe(128);
        expect(value("llama.vocab_size")).toBe(260);
        expect(value("tokenizer.ggml.add_space_prefix")).toBe(false);
        expect(header.tensor("blk.2.attn_k.weight").dimensions).toEqual([96, 32]); // 2 kv heads × 16
        expect(header.tensor("token_embd.weight").dimensions).toEqual([96, 260]);
        expect(header.tensors).toHaveLength(2 + 3 * 9 + 1);

        // It loads and evaluates in llama.cpp, grouped-query attention included.
        const rows = await allLogits(pair.targetPath, [1, 50, 60]);
        expect(rows[2].every(Number.isFinite)).toBe(true);
        expect((await allLogits(pair.draftPath, [1, 50]))[1].length).toBe(260);
    });

    it("gives output distributions that are neither one-hot nor uniform, and a correlated draft", async () => {
        const pair = await writeRandomLlamaPair({directory: await mkdtemp(join(directory, "stats-")), seed: 7});
        const unrelated = await writeRandomLlamaPair({directory: await mkdtemp(join(directory, "unrelated-")), seed: 8});
        const tokens = [1, ...pair.tokenizer!.tokenize("The quick brown fox jumps over the lazy dog. 日本語もあります。")];
        const target = (await allLogits(pair.targetPath, tokens)).map(softmax);
        const draft = (await allLogits(pair.draftPath, tokens)).map(softmax);
        const stranger = (await allLogits(unrelated.draftPath, tokens)).map(softmax);

        const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;
        const entropy = (p: Float64Array): number => -p.reduce((sum, x) => sum + (x > 0 ? x * Math.log(x) : 0), 0);
        const overlap = (p: Float64Array, q: Float64Array): number => p.reduce((sum, x, i) => sum + Math.min(x, q[i]), 0);

        const targetEntropy = mean(target.map(entropy));
        expect(targetEntropy).toBeGreaterThan(1.5); // far from one-hot (0)
        expect(targetEntropy).toBeLessThan(4.5); // far from uniform (ln 260 = 5.56)
        expect(mean(target.map((p) => Math.max(...p)))).toBeLessThan(0.7);

        // Expected acceptance of rejection sampling, Σ min(p, q) = 1 − TV.
        const acceptance = mean(target.map((p, i) => overlap(p, draft[i])));
        const strangerAcceptance = mean(target.map((p, i) => overlap(p, stranger[i])));
        expect(acceptance).toBeGreaterThan(0.4);
        expect(acceptance).toBeLessThan(0.9);
        expect(strangerAcceptance).toBeLessThan(acceptance - 0.2);
    });

    it("writes F16 and Q8_0 weights whose logits stay close to the F32 model's", async () => {
        const tokens = [1, 40, 50, 60, 70, 80];
        const logitsFor = async (weightType: GgmlTensorType): Promise<Float64Array[]> => {
            const pair = await writeRandomLlamaPair({
                directory: await mkdtemp(join(directory, `type-${weightType}-`)),
                seed: 9,
                weightType
            });
            return allLogits(pair.targetPath, tokens);
        };
        const reference = await logitsFor(GgmlTensorType.F32);
        const difference = (rows: Float64Array[]): number =>
            Math.max(...rows.map((row, i) => Math.max(...row.map((logit, j) => Math.abs(logit - reference[i][j])))));
        // Logits have magnitude ~10. F16 keeps 11 significant bits (observed ~0.005); Q8_0 about
        // 8 bits per block, and llama.cpp also quantises activations to 8 bits for Q8_0 matmuls (observed ~0.1).
        const f16 = difference(await logitsFor(GgmlTensorType.F16));
        const q8 = difference(await logitsFor(GgmlTensorType.Q8_0));
        expect(f16).toBeGreaterThan(0);
        expect(f16).toBeLessThan(0.05);
        expect(q8).toBeGreaterThan(f16);
        expect(q8).toBeLessThan(0.5);
    });

    it("refuses a draft that is not a slice of the target", async () => {
        await expect(writeRandomLlamaPair({directory, seed: 1, draft: {embeddingLength: 128, headCount: 8}})).rejects.toThrow(
            InvalidInputError
        );
        await expect(writeRandomLlamaPair({directory, seed: 1, draft: {headCount: 4}})) // head size 8 ≠ 16
            .rejects.toThrow(InvalidInputError);
        await expect(writeRandomLlamaPair({directory, seed: 1, draftNoise: -1})).rejects.toThrow(InvalidInputError);
    });
});
