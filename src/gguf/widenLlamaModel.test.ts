import {readFileSync} from "node:fs";
import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {InvalidInputError} from "../errors.js";
import {GgmlTensorType} from "./GgmlTensorType.js";
import {GgufReader} from "./GgufReader.js";
import {GgufWriter} from "./GgufWriter.js";
import {writeRandomLlamaPair} from "./randomLlamaModel.js";
import {widenLlamaModel, type WidenedShape, type WidenLlamaModelOptions} from "./widenLlamaModel.js";

/** What the twin's file holds; its function is checked on the native backend in widenLlamaModel.gguf.test.ts. */
let directory: string;
let source: string;
// The source: d 64, 2 layers, 4 heads of 16 on 2 key/value heads, ff 96.
const sourceShape = {embeddingLength: 64, blockCount: 2, headCount: 4, headCountKv: 2, feedForwardLength: 96};
const shape: WidenedShape = {embeddingLength: 128, blockCount: 4, headCount: 8, feedForwardLength: 160};

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-widen-"));
    source = (await writeRandomLlamaPair({directory, seed: 4, target: sourceShape, chatTemplate: "{{ messages }}"})).targetPath;
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

function widen(name: string, options: Partial<WidenLlamaModelOptions> = {}) {
    return widenLlamaModel({source, shape, outputPath: join(directory, name), ...options});
}

/** rows × columns of a [columns, rows] tensor, as row arrays. */
function rowsOf(reader: GgufReader, name: string): Float32Array[] {
    const [columns, rows] = reader.tensor(name).dimensions;
    const values = reader.readTensor(name);
    return Array.from({length: rows}, (_unused, row) => values.subarray(row * columns, (row + 1) * columns));
}

const isZero = (values: ArrayLike<number>): boolean => Array.from(values).every((value) => value === 0);

describe("widenLlamaModel", () => {
    it("writes the twin's shape with the source's vocabulary, template and context, and says what it is", async () => {
        const twin = await widen("twin.gguf");
        expect(twin.shape).toMatchObject({...shape, headCountKv: 4, contextLength: 256, vocabularySize: 260});
        expect(twin.placement).toEqual({layers: [0, 2], kvHeads: [0, 2], heads: [0, 1, 4, 5]});
        const original = GgufReader.readHeader(source);
        const reader = GgufReader.readHeader(twin.path);
        for (const [key, entry] of original.metadata)
            if (key.startsWith("tokenizer.") || key === "llama.context_length" || key.startsWith("llama.rope."))
                expect(reader.metadata.get(key), key).toEqual(entry);
        expect(reader.metadata.get("tokenizer.chat_template")?.value).toBe("{{ messages }}");
        const value = (key: string) => reader.metadata.get(key)?.value;
        expect([value("llama.embedding_length"), value("llama.block_count"), value("llama.attention.head_count")]).toEqual([128, 4, 8]);
        expect([value("llama.attention.head_count_kv"), value("llama.feed_forward_length")]).toEqual([4, 160]);
        const epsilon = Number(original.metadata.get("llama.attention.layer_norm_rms_epsilon")?.value);
        expect(value("llama.attention.layer_norm_rms_epsilon")).toBe(Math.fround((epsilon * 64) / 128));
        expect(value("general.description")).toMatch(/widened twin of target\.gguf .* not a better model/);
        expect(twin.parameterCount).toBe(260 * 128 * 2 + 128 + 4 * (2 * 128 + 128 * 128 * 2 + 128 * 64 * 2 + 3 * 128 * 160));
    });

    it("is dense at the full shape, with the source's weights in place and zero where they would change the function", async () => {
        const twin = await widen("dense.gguf", {weightType: GgmlTensorType.F32});
        const reader = GgufReader.open(twin.path);
        const original = GgufReader.open(source);
        try {
            const gain = Math.sqrt(64 / 128);
            const norm = reader.readTensor("blk.2.attn_norm.weight");
            const sourceNorm = original.readTensor("blk.1.attn_norm.weight");
            expect(norm[5]).toBeCloseTo(sourceNorm[5] * gain, 6);
            expect(norm[100]).toBeCloseTo(gain, 6);

            // The source's query head 3 sits at twin head 5 (key/value group 2 → twin group 4).
            const query = rowsOf(reader, "blk.2.attn_q.weight");
            const sourceQuery = rowsOf(original, "blk.1.attn_q.weight");
            expect(Array.from(query[5 * 16 + 7].subarray(0, 64))).toEqual(Array.from(sourceQuery[3 * 16 + 7]));
            expect(isZero(query[5 * 16 + 7].subarray(64))).toBe(true);
            expect(isZero(query[2 * 16])).toBe(false); // an extra head: dense

            // attn_output: the source's columns on rows < d; extra heads' columns and rows >= d zero.
            const output = rowsOf(reader, "blk.2.attn_output.weight");
            const sourceOutput = rowsOf(original, "blk.1.attn_output.weight");
            expect(Array.from(output[9].subarray(5 * 16, 6 * 16))).toEqual(Array.from(sourceOutput[9].subarray(3 * 16, 4 * 16)));
            expect(isZero(output[9].subarray(2 * 16, 4 * 16))).toBe(true);
            expect(output.slice(64).every(isZero)).toBe(true);

            const down = rowsOf(reader, "blk.0.ffn_down.weight");
            expect(Array.from(down[3].subarray(0, 96))).toEqual(Array.from(rowsOf(original, "blk.0.ffn_down.weight")[3]));
            expect(isZero(down[3].subarray(96))).toBe(true);
            expect(isZero(reader.readTensor("blk.1.ffn_up.weight"))).toBe(false); // an extra layer: dense inputs…
            expect(isZero(reader.readTensor("blk.1.ffn_down.weight"))).toBe(true); // …and no writes

            const embedding = rowsOf(reader, "token_embd.weight");
            expect(Array.from(embedding[70].subarray(0, 64))).toEqual(Array.from(rowsOf(original, "token_embd.weight")[70]));
            expect(isZero(embedding[70].subarray(64))).toBe(true);
        } finally {
            reader.close();
            original.close();
        }
    });

    it("stores the matrices as asked (norm gains stay F32), and Q8_0 needs d and ff in whole blocks", async () => {
        for (const weightType of [GgmlTensorType.F16, GgmlTensorType.Q8_0]) {
            const reader = GgufReader.readHeader((await widen(`typed-${weightType}.gguf`, {weightType})).path);
            expect(reader.tensor("blk.3.ffn_gate.weight").type).toBe(weightType);
            expect(reader.tensor("blk.3.ffn_norm.weight").type).toBe(GgmlTensorType.F32);
        }
        await expect(
            widen("bad.gguf", {
                weightType: GgmlTensorType.Q8_0,
                shape: {...shape, feedForwardLength: 100},
                fields: {shape: "--target-shape"}
            })
        ).rejects.toThrow("--target-shape: Q8_0 needs ff to be a multiple of 32, got 100");
    });

    it("refuses shapes that cannot hold the source, naming the field", async () => {
        const refusals: [Partial<WidenedShape>, RegExp][] = [
            [{headCount: 6}, /head size 16, so heads must be embedding\/16: 128\/16 = 8, got 6/],
            [{embeddingLength: 48, headCount: 3}, /d 48 is below the source's 64/],
            [{blockCount: 1}, /layers 1 is below the source's 2/],
            [{embeddingLength: 112, headCount: 7}, /heads 7 must be a multiple of the source's 2 query heads per key\/value head/],
            [{feedForwardLength: 1.5}, /ff must be a positive integer/]
        ];
        for (const [change, message] of refusals) {
            const attempt = widen("refused.gguf", {shape: {...shape, ...change}});
            await expect(attempt).rejects.toThrow(InvalidInputError);
            await expect(attempt).rejects.toThrow(message);
        }
        await expect(widen("refused.gguf", {shape: {...sourceShape}, perturb: 1})).rejects.toThrow(/perturb: needs an extra head/);
        await expect(widen("refused.gguf", {perturb: -1})).rejects.toThrow(/perturb: must be a finite number >= 0/);
        await expect(
            widenLlamaModel({source: join(directory, "missing.gguf"), shape, outputPath: join(directory, "x.gguf")})
        ).rejects.toThrow(/no such model file/);
    });

    it("perturb 0 is byte for byte the unperturbed twin for any seed; a positive one changes only the zero output projections", async () => {
        const plain = await widen("plain.gguf");
        const zero = await widen("zero.gguf", {perturb: 0, seed: 99});
        expect(readFileSync(zero.path).equals(readFileSync(plain.path))).toBe(true);

        const perturbed = await widen("perturbed.gguf", {perturb: 1, seed: 5});
        const again = await widen("again.gguf", {perturb: 1, seed: 5});
        expect(readFileSync(again.path).equals(readFileSync(perturbed.path))).toBe(true);
        expect(GgufReader.readHeader(perturbed.path).metadata.get("general.description")?.value).toMatch(/Perturbed \(sigma 1, seed 5\)/);
        const a = GgufReader.open(plain.path);
        const b = GgufReader.open(perturbed.path);
        try {
            for (const tensor of a.tensors) {
                const after = b.readTensor(tensor.name);
                const changed = !isZero(a.readTensor(tensor.name).map((value, index) => value - after[index]));
                expect(changed, tensor.name).toBe(/attn_output|ffn_down/.test(tensor.name));
            }
            // The source's own columns are untouched; the extra heads' columns carry the noise.
            const output = rowsOf(b, "blk.0.attn_output.weight");
            expect(Array.from(output[9].subarray(0, 32))).toEqual(Array.from(rowsOf(a, "blk.0.attn_output.weight")[9].subarray(0, 32)));
            expect(isZero(output[9].subarray(32, 64))).toBe(false);
        } finally {
            a.close();
            b.close();
        }
    });

    it("keeps a tied embedding tied, and refuses a source with tensors a plain llama lacks", async () => {
        const copy = async (name: string, change: (writer: GgufWriter, reader: GgufReader) => void): Promise<string> => {
            const reader = GgufReader.open(source);
            try {
                const writer = new GgufWriter();
                for (const [key, entry] of reader.metadata) writer.set(key, entry.type, entry.value);
                change(writer, reader);
                await writer.writeFile(join(directory, name));
                return join(directory, name);
            } finally {
                reader.close();
            }
        };
        const copyTensors = (writer: GgufWriter, reader: GgufReader, skip: string): void => {
            for (const tensor of reader.tensors)
                if (tensor.name !== skip) writer.addTensor(tensor.name, tensor.dimensions, tensor.type, reader.readTensor(tensor.name));
        };
        const tied = await copy("tied.gguf", (writer, reader) => copyTensors(writer, reader, "output.weight"));
        const twin = await widenLlamaModel({source: tied, shape, outputPath: join(directory, "tied-twin.gguf")});
        expect(GgufReader.readHeader(twin.path).tensors.some((tensor) => tensor.name === "output.weight")).toBe(false);

        const extra = await copy("extra.gguf", (writer, reader) => {
            copyTensors(writer, reader, "");
            writer.addTensor("rope_freqs.weight", [8], GgmlTensorType.F32, new Float32Array(8).fill(1));
        });
        await expect(
            widenLlamaModel({source: extra, shape, outputPath: join(directory, "x.gguf"), fields: {source: "--widen-from"}})
        ).rejects.toThrow("--widen-from: has a tensor rope_freqs.weight a widened twin cannot reproduce");
    });
});
