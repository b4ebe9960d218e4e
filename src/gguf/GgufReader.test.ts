import {mkdir, mkdtemp, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {ModelLoadError} from "../errors.js";
import {GgmlTensorType} from "./GgmlTensorType.js";
import {GgufReader} from "./GgufReader.js";
import {GgufValueType} from "./GgufValueType.js";
import {GgufWriter} from "./GgufWriter.js";

let directory: string;
beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-reader-"));
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

async function reasonFor(bytes: Uint8Array): Promise<string> {
    const path = join(directory, `case-${Math.random().toString(36).slice(2)}.gguf`);
    await writeFile(path, bytes);
    try {
        GgufReader.readHeader(path);
        return "accepted";
    } catch (error) {
        expect(error).toBeInstanceOf(ModelLoadError);
        return (error as ModelLoadError).reason;
    }
}

describe("GgufReader", () => {
    const valid = new GgufWriter()
        .setArray("list", GgufValueType.Uint32, [1, 2, 3])
        .addTensor("t", [32], GgmlTensorType.Q8_0, new Float32Array(32))
        .toBuffer();

    it("accepts what the writer wrote", async () => {
        expect(await reasonFor(valid)).toBe("accepted");
    });

    it("says a folder is a folder, naming the GGUF files in it", async () => {
        const folder = join(directory, "model-folder");
        await mkdir(folder);
        await writeFile(join(folder, "model.gguf"), valid);
        expect(() => GgufReader.readHeader(folder)).toThrow(
            expect.objectContaining({
                reason: "missing",
                field: folder,
                message: `${folder}: is a folder, not a GGUF model file; it holds ${join(folder, "model.gguf")}`
            })
        );
    });

    it("reports a missing file, wrong magic and every kind of damaged header", async () => {
        expect(() => GgufReader.readHeader(join(directory, "absent.gguf"))).toThrow(expect.objectContaining({reason: "missing"}));
        expect(await reasonFor(Buffer.from("GGML not gguf"))).toBe("not_gguf");
        expect(await reasonFor(new Uint8Array(0))).toBe("corrupt"); // too short to hold the magic

        const badVersion = Buffer.from(valid);
        badVersion.writeUint32LE(99, 4);
        expect(await reasonFor(badVersion)).toBe("corrupt");

        const hugeArray = Buffer.from(valid);
        // Header (24 bytes) + key "list" (8 + 4) + value type (4) + item type (4) → the item count.
        hugeArray.writeBigUint64LE(1n << 40n, 24 + 12 + 4 + 4);
        expect(await reasonFor(hugeArray)).toBe("corrupt");

        const unknownType = Buffer.from(valid);
        unknownType.writeUint32LE(77, 24 + 12);
        expect(await reasonFor(unknownType)).toBe("corrupt");

        expect(await reasonFor(valid.subarray(0, 30))).toBe("corrupt"); // cut inside the metadata
        expect(await reasonFor(valid.subarray(0, valid.length - 40))).toBe("corrupt"); // tensor data cut
    });
});
