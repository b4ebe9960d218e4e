import {readdirSync, readFileSync} from "node:fs";
import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {GgmlTensorType} from "./GgmlTensorType.js";
import {writeGgufStreaming, type StreamedTensor} from "./GgufStreamWriter.js";
import {encodeTensorValues, GgufWriter} from "./GgufWriter.js";

let directory: string;
beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-gguf-stream-"));
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

const tensors = [
    {name: "a", dimensions: [3], type: GgmlTensorType.F32},
    {name: "b", dimensions: [64, 3], type: GgmlTensorType.Q8_0},
    {name: "c", dimensions: [5, 7], type: GgmlTensorType.F16}
] as const;

function valuesOf(count: number, salt: number): Float32Array {
    return Float32Array.from({length: count}, (_unused, index) => Math.sin(index * 0.37 + salt));
}

/** Each tensor streamed in chunks of `chunk` values (whole Q8_0 blocks); `extra` more (or fewer) values for "b". */
function streamed(chunk: number, extra = 0): StreamedTensor[] {
    return tensors.map((tensor, salt) => ({
        ...tensor,
        *chunks() {
            const values = valuesOf(
                tensor.dimensions.reduce((product, size) => product * size, 1) + (tensor.name === "b" ? extra : 0),
                salt
            );
            for (let start = 0; start < values.length; start += chunk)
                yield encodeTensorValues(tensor.type, values.subarray(start, start + chunk));
        }
    }));
}

function metadata(writer: GgufWriter): GgufWriter {
    return writer.setString("general.architecture", "test").setUint32("test.count", 3);
}

describe("writeGgufStreaming", () => {
    it("writes the bytes GgufWriter builds in memory, whatever the chunking", async () => {
        const whole = metadata(new GgufWriter());
        tensors.forEach((tensor, salt) =>
            whole.addTensor(
                tensor.name,
                tensor.dimensions,
                tensor.type,
                valuesOf(
                    tensor.dimensions.reduce((a, b) => a * b, 1),
                    salt
                )
            )
        );
        for (const chunk of [32, 64, 1024]) {
            const path = join(directory, `streamed-${chunk}.gguf`);
            const size = await writeGgufStreaming(path, metadata(new GgufWriter()), streamed(chunk));
            expect(readFileSync(path).equals(whole.toBuffer())).toBe(true);
            expect(size).toBe(whole.toBuffer().length);
        }
    });

    it("refuses a tensor that produces more or fewer bytes than its shape, leaving no file behind", async () => {
        for (const extra of [32, -32]) {
            const path = join(directory, `wrong-${extra}.gguf`);
            await expect(writeGgufStreaming(path, metadata(new GgufWriter()), streamed(32, extra))).rejects.toThrow(
                /b: \[64, 3\] as Q8_0 is 204 bytes/
            );
            expect(readdirSync(directory).filter((name) => name.startsWith(`wrong-${extra}`))).toEqual([]);
        }
    });
});
