import {mkdtemp, readdir, readFile, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {readGgufFileInfo} from "node-llama-cpp";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {InvalidInputError} from "../errors.js";
import {float16BitsToFloat32, float32ToFloat16Bits} from "./float16.js";
import {GgmlTensorType} from "./GgmlTensorType.js";
import {GgufReader} from "./GgufReader.js";
import {GgufValueType} from "./GgufValueType.js";
import {GgufWriter} from "./GgufWriter.js";

let directory: string;
beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-gguf-"));
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

/** Values that exercise rounding: not representable in fp16, mixed signs and magnitudes. */
function testValues(count: number): Float32Array {
    const values = new Float32Array(count);
    for (let i = 0; i < count; i++) values[i] = Math.fround(Math.sin(i * 1.7) * (i % 5 === 0 ? 10 : 0.3) + i * 1e-4);
    return values;
}

describe("GgufWriter", () => {
    it("writes metadata of every GGUF type that reads back identically", async () => {
        const path = join(directory, "metadata.gguf");
        const writer = new GgufWriter()
            .set("u8", GgufValueType.Uint8, 255)
            .set("i8", GgufValueType.Int8, -128)
            .set("u16", GgufValueType.Uint16, 65535)
            .set("i16", GgufValueType.Int16, -32768)
            .set("u32", GgufValueType.Uint32, 4294967295)
            .set("i32", GgufValueType.Int32, -2147483648)
            .set("f32", GgufValueType.Float32, 0.1)
            .set("bool", GgufValueType.Bool, true)
            .set("string", GgufValueType.String, "日本語 😀 e\u0301")
            .set("u64", GgufValueType.Uint64, 0xffff_ffff_ffff_ffffn)
            .set("i64", GgufValueType.Int64, -(2n ** 63n))
            .set("f64", GgufValueType.Float64, 0.1)
            .setArray("strings", GgufValueType.String, ["a", "", "▁b"])
            .setArray("nested", GgufValueType.Array, [
                {itemType: GgufValueType.Int32, items: [1, -2]},
                {itemType: GgufValueType.Bool, items: []}
            ]);
        await writer.writeFile(path);

        const reader = GgufReader.readHeader(path);
        expect(reader.version).toBe(3);
        const value = (key: string): unknown => reader.metadata.get(key)?.value;
        expect(value("u8")).toBe(255);
        expect(value("i8")).toBe(-128);
        expect(value("u16")).toBe(65535);
        expect(value("i16")).toBe(-32768);
        expect(value("u32")).toBe(4294967295);
        expect(value("i32")).toBe(-2147483648);
        expect(value("f32")).toBe(Math.fround(0.1));
        expect(value("bool")).toBe(true);
        expect(value("string")).toBe("日本語 😀 e\u0301");
        expect(value("u64")).toBe(0xffff_ffff_ffff_ffffn);
        expect(value("i64")).toBe(-(2n ** 63n));
        expect(value("f64")).toBe(0.1);
        expect(value("strings")).toEqual({itemType: GgufValueType.String, items: ["a", "", "▁b"]});
        expect(value("nested")).toEqual({
            itemType: GgufValueType.Array,
            items: [
                {itemType: GgufValueType.Int32, items: [1, -2]},
                {itemType: GgufValueType.Bool, items: []}
            ]
        });
        expect(reader.metadata.get("u16")?.type).toBe(GgufValueType.Uint16);

        // An independent parser (node-llama-cpp's) agrees on the scalar values.
        const info = await readGgufFileInfo(path, {logWarnings: false});
        const metadata = info.metadata as unknown as Record<string, unknown>;
        expect(metadata["u32"]).toBe(4294967295);
        expect(metadata["string"]).toBe("日本語 😀 e\u0301");
        expect(metadata["strings"]).toEqual(["a", "", "▁b"]);
    });

    it("writes F32 exactly, F16 rounded to nearest even and Q8_0 within half a step, all aligned", async () => {
        const path = join(directory, "tensors.gguf");
        const f32 = testValues(3 * 5);
        const f16 = testValues(7 * 3);
        const q8 = testValues(64 * 3);
        await new GgufWriter({alignment: 64})
            .addTensor("a.f32", [5, 3], GgmlTensorType.F32, f32)
            .addTensor("b.f16", [7, 3], GgmlTensorType.F16, f16)
            .addTensor("c.q8_0", [64, 3], GgmlTensorType.Q8_0, q8)
            .addTensor("d.vector", [3], GgmlTensorType.F32, new Float32Array([1, 2, 3]))
            .writeFile(path);

        const reader = GgufReader.open(path);
        try {
            expect(reader.alignment).toBe(64);
            expect(reader.dataOffset % 64).toBe(0);
            for (const tensor of reader.tensors) expect(tensor.offset % 64).toBe(0);
            expect(reader.tensor("b.f16").dimensions).toEqual([7, 3]);

            expect([...reader.readTensor("a.f32")]).toEqual([...f32]);
            expect([...reader.readTensor("b.f16")]).toEqual([...f16].map((x) => float16BitsToFloat32(float32ToFloat16Bits(x))));
            const restored = reader.readTensor("c.q8_0");
            const raw = reader.readTensorBytes("c.q8_0");
            expect(raw.length).toBe(6 * 34); // 192 values = 6 blocks of (fp16 scale + 32 int8)
            for (let block = 0; block < 6; block++) {
                const blockValues = q8.subarray(block * 32, (block + 1) * 32);
                const maximum = Math.max(...blockValues.map(Math.abs));
                const scale = float16BitsToFloat32(raw[block * 34] | (raw[block * 34 + 1] << 8));
                expect(scale).toBeCloseTo(maximum / 127, 4);
                for (let i = 0; i < 32; i++) expect(Math.abs(restored[block * 32 + i] - blockValues[i])).toBeLessThanOrEqual(scale * 0.57);
            }
            expect([...reader.readTensor("d.vector")]).toEqual([1, 2, 3]);
        } finally {
            reader.close();
        }

        const info = await readGgufFileInfo(path, {logWarnings: false});
        expect(info.tensorInfo?.map((tensor) => [tensor.name, tensor.ggmlType, tensor.dimensions.map(Number)])).toEqual([
            ["a.f32", 0, [5, 3]],
            ["b.f16", 1, [7, 3]],
            ["c.q8_0", 8, [64, 3]],
            ["d.vector", 0, [3]]
        ]);
        // The file ends with the last tensor padded to the alignment, as gguf_init expects.
        const size = (await readFile(path)).length;
        expect(size % 64).toBe(0);
    });

    it("writes atomically, leaving no temporary file and replacing an existing one", async () => {
        const folder = await mkdtemp(join(directory, "atomic-"));
        const path = join(folder, "model.gguf");
        await writeFile(path, "old contents");
        await new GgufWriter().setString("general.name", "new").writeFile(path);
        expect(await readdir(folder)).toEqual(["model.gguf"]);
        expect(GgufReader.readHeader(path).metadata.get("general.name")?.value).toBe("new");
        await expect(new GgufWriter().writeFile(join(folder, "no-such-folder", "x.gguf"))).rejects.toThrow();
        expect(await readdir(folder)).toEqual(["model.gguf"]);
    });

    it("rejects invalid metadata and tensors with InvalidInputError", () => {
        const writer = new GgufWriter().setUint32("key", 1);
        expect(() => writer.setUint32("key", 2)).toThrow(InvalidInputError);
        expect(() => writer.set("u8", GgufValueType.Uint8, 256)).toThrow(InvalidInputError);
        expect(() => writer.set("i32", GgufValueType.Int32, 1.5)).toThrow(InvalidInputError);
        expect(() => writer.set("u64", GgufValueType.Uint64, -1n)).toThrow(InvalidInputError);
        expect(() => writer.set("s", GgufValueType.String, 3)).toThrow(InvalidInputError);
        expect(() => writer.setArray("a", GgufValueType.Int8, [1, 300])).toThrow(/a\[1\]/);
        expect(() => writer.addTensor("t", [2, 2], GgmlTensorType.F32, new Float32Array(3))).toThrow(InvalidInputError);
        expect(() => writer.addTensor("t", [16, 2], GgmlTensorType.Q8_0, new Float32Array(32))).toThrow(InvalidInputError);
        expect(() => writer.addTensor("t", [2], GgmlTensorType.F32, new Float32Array([1, NaN]))).toThrow(InvalidInputError);
        expect(() => writer.addTensor("x".repeat(64), [1], GgmlTensorType.F32, new Float32Array(1))).toThrow(InvalidInputError);
        expect(() => new GgufWriter({alignment: 24})).toThrow(InvalidInputError);
    });
});
