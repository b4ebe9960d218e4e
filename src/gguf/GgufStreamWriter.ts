import {randomBytes} from "node:crypto";
import {open, rename, rm} from "node:fs/promises";
import {InvalidInputError} from "../errors.js";
import {trackTemporaryFile} from "../io/temporaryFiles.js";
import {GgmlTensorType, ggmlTensorByteLength} from "./GgmlTensorType.js";
import type {GgufTensorDescriptor, GgufWriter} from "./GgufWriter.js";

/** A tensor whose data is produced in pieces, in storage order, while the file is written. */
export interface StreamedTensor extends GgufTensorDescriptor {
    /**
     * The tensor's data already stored as its type (encodeTensorValues), in chunks. A chunk may be
     * reused by the producer once the next one is asked for.
     */
    chunks(): Iterable<Uint8Array>;
}

/**
 * Writes a GGUF file whose tensors are produced one chunk at a time, so a model larger than memory
 * can be written: `header` supplies the metadata (its own tensors, if any, are ignored), the data
 * of `tensors` follows in order, each checked to be its descriptor's size. Atomic like
 * GgufWriter.writeFile: a temp file beside `path`, renamed over it once complete. Returns the file's
 * size in bytes.
 */
export async function writeGgufStreaming(path: string, header: GgufWriter, tensors: readonly StreamedTensor[]): Promise<number> {
    const headerBytes = header.headerFor(tensors);
    const temporaryPath = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
    const untrack = trackTemporaryFile(temporaryPath);
    try {
        const file = await open(temporaryPath, "wx");
        let written = 0;
        try {
            written += await writeAll(file, headerBytes);
            for (const tensor of tensors) {
                written += await writeTensorData(file, tensor);
                written += await writeAll(file, new Uint8Array(paddingAfter(written, header.dataAlignment)));
            }
            await file.sync();
        } finally {
            await file.close();
        }
        await rename(temporaryPath, path);
        return written;
    } catch (error) {
        await rm(temporaryPath, {force: true});
        throw error;
    } finally {
        untrack();
    }
}

type WritableFile = Awaited<ReturnType<typeof open>>;

async function writeTensorData(file: WritableFile, tensor: StreamedTensor): Promise<number> {
    const expected = ggmlTensorByteLength(
        tensor.type,
        tensor.dimensions.reduce((product, size) => product * size, 1)
    );
    let bytes = 0;
    for (const chunk of tensor.chunks()) {
        bytes += chunk.length;
        if (bytes > expected) break;
        await writeAll(file, chunk);
    }
    if (bytes !== expected)
        throw new InvalidInputError(
            `[${tensor.dimensions.join(", ")}] as ${GgmlTensorType[tensor.type]} is ${expected} bytes, got ${bytes > expected ? "more" : bytes}`,
            tensor.name
        );
    return bytes;
}

async function writeAll(file: WritableFile, bytes: Uint8Array): Promise<number> {
    let offset = 0;
    while (offset < bytes.length) {
        const {bytesWritten} = await file.write(bytes, offset, bytes.length - offset);
        offset += bytesWritten;
    }
    return bytes.length;
}

function paddingAfter(length: number, alignment: number): number {
    return (alignment - (length % alignment)) % alignment;
}
