import {closeSync, fstatSync, openSync, readSync, readdirSync} from "node:fs";
import {join} from "node:path";
import {ModelLoadError} from "../errors.js";
import {float16BitsToFloat32} from "./float16.js";
import {GgmlTensorType, ggmlTensorByteLength, q8_0BlockSize} from "./GgmlTensorType.js";
import type {GgufMetadataEntry, GgufMetadataValue} from "./GgufMetadataValue.js";
import {GgufValueType} from "./GgufValueType.js";
import {ggufDefaultAlignment, ggufMagic} from "./GgufWriter.js";
import {dequantizeQ8_0} from "./q8_0.js";

export interface GgufTensorInfo {
    readonly name: string;
    /** ggml order: dimensions[0] is the contiguous axis. */
    readonly dimensions: readonly number[];
    /** The raw ggml type number (a GgmlTensorType when this reader can decode it). */
    readonly type: number;
    /** Byte offset of the data, relative to the start of the data section. */
    readonly offset: number;
}

/**
 * A small GGUF reader: parses the header (metadata + tensor descriptors) with bounded reads, checks
 * that every tensor lies inside the file, and decodes F32 / F16 / Q8_0 tensors to float32.
 *
 * It exists so a model file can be validated before native code sees it (llama.cpp reports a bad
 * file only as a generic load failure) and so tests can check what the writer put on disk.
 * Failures are ModelLoadError: "missing", "not_gguf" (wrong magic) or "corrupt".
 */
export class GgufReader {
    public readonly version: number;
    public readonly metadata: ReadonlyMap<string, GgufMetadataEntry>;
    public readonly tensors: readonly GgufTensorInfo[];
    public readonly alignment: number;
    /** Absolute file offset of the tensor data section. */
    public readonly dataOffset: number;
    public readonly fileSize: number;
    private readonly cursor: FileCursor;

    private constructor(cursor: FileCursor, path: string) {
        this.cursor = cursor;
        this.fileSize = cursor.fileSize;
        const magic = cursor.uint32();
        if (magic !== ggufMagic) throw new ModelLoadError("not_gguf", "not a GGUF file (magic bytes differ)", path);
        this.version = cursor.uint32();
        if (this.version !== 2 && this.version !== 3) throw new ModelLoadError("corrupt", `unsupported GGUF version ${this.version}`, path);
        const tensorCount = cursor.uint64();
        const metadataCount = cursor.uint64();

        const metadata = new Map<string, GgufMetadataEntry>();
        for (let i = 0; i < metadataCount; i++) {
            const key = cursor.string();
            const type = cursor.uint32();
            if (metadata.has(key)) throw new ModelLoadError("corrupt", `duplicate metadata key ${key}`, path);
            metadata.set(key, {type, value: readValue(cursor, type, path)});
        }
        this.metadata = metadata;

        const alignmentEntry = metadata.get("general.alignment");
        this.alignment = alignmentEntry !== undefined ? Number(alignmentEntry.value) : ggufDefaultAlignment;
        if (!Number.isInteger(this.alignment) || this.alignment <= 0 || (this.alignment & (this.alignment - 1)) !== 0)
            throw new ModelLoadError("corrupt", `invalid general.alignment ${String(alignmentEntry?.value)}`, path);

        const tensors: GgufTensorInfo[] = [];
        for (let i = 0; i < tensorCount; i++) {
            const name = cursor.string();
            const dimensionCount = cursor.uint32();
            if (dimensionCount < 1 || dimensionCount > 4)
                throw new ModelLoadError("corrupt", `tensor ${name} has ${dimensionCount} dimensions`, path);
            const dimensions: number[] = [];
            for (let d = 0; d < dimensionCount; d++) dimensions.push(cursor.uint64());
            tensors.push({name, dimensions, type: cursor.uint32(), offset: cursor.uint64()});
        }
        this.tensors = tensors;
        this.dataOffset = Math.ceil(cursor.position / this.alignment) * this.alignment;

        for (const tensor of tensors) {
            const byteLength = tensorByteLength(tensor);
            if (byteLength !== undefined && this.dataOffset + tensor.offset + byteLength > this.fileSize)
                throw new ModelLoadError("corrupt", `tensor ${tensor.name} extends past the end of the file (truncated?)`, path);
            if (tensor.offset % this.alignment !== 0) throw new ModelLoadError("corrupt", `tensor ${tensor.name} is not aligned`, path);
        }
    }

    /** Opens and parses the header; the file stays open for `readTensor` until `close`. */
    public static open(path: string): GgufReader {
        let descriptor: number;
        try {
            descriptor = openSync(path, "r");
        } catch (error) {
            const code = (error as NodeJS.ErrnoException).code;
            if (code === "ENOENT" || code === "ENOTDIR") throw new ModelLoadError("missing", "no such model file", path);
            throw new ModelLoadError("missing", `cannot open model file: ${(error as Error).message}`, path);
        }
        if (fstatSync(descriptor).isDirectory()) {
            closeSync(descriptor);
            throw new ModelLoadError("missing", folderMessage(path), path);
        }
        const cursor = new FileCursor(descriptor, path);
        try {
            return new GgufReader(cursor, path);
        } catch (error) {
            cursor.close();
            throw error;
        }
    }

    /** Parses the header and closes the file. */
    public static readHeader(path: string): GgufReader {
        const reader = GgufReader.open(path);
        reader.close();
        return reader;
    }

    public tensor(name: string): GgufTensorInfo {
        const tensor = this.tensors.find((candidate) => candidate.name === name);
        if (tensor === undefined) throw new ModelLoadError("corrupt", `no tensor named ${name}`, name);
        return tensor;
    }

    /** The raw stored bytes of a tensor. */
    public readTensorBytes(name: string): Uint8Array {
        const tensor = this.tensor(name);
        const byteLength = tensorByteLength(tensor);
        if (byteLength === undefined)
            throw new ModelLoadError("corrupt", `tensor type ${tensor.type} is not supported by this reader`, name);
        return this.cursor.readAt(this.dataOffset + tensor.offset, byteLength);
    }

    /** A tensor's values decoded to float32 (Q8_0 dequantised as q * d). */
    public readTensor(name: string): Float32Array {
        const tensor = this.tensor(name);
        const bytes = this.readTensorBytes(name);
        const count = elementCount(tensor);
        const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
        const values = new Float32Array(count);
        switch (tensor.type) {
            case GgmlTensorType.F32:
                for (let i = 0; i < count; i++) values[i] = view.getFloat32(i * 4, true);
                return values;
            case GgmlTensorType.F16:
                for (let i = 0; i < count; i++) values[i] = float16BitsToFloat32(view.getUint16(i * 2, true));
                return values;
            default:
                return dequantizeQ8_0(bytes, count);
        }
    }

    public close(): void {
        this.cursor.close();
    }
}

function elementCount(tensor: GgufTensorInfo): number {
    return tensor.dimensions.reduce((product, size) => product * size, 1);
}

function tensorByteLength(tensor: GgufTensorInfo): number | undefined {
    if (tensor.type !== GgmlTensorType.F32 && tensor.type !== GgmlTensorType.F16 && tensor.type !== GgmlTensorType.Q8_0) return undefined;
    if (tensor.type === GgmlTensorType.Q8_0 && tensor.dimensions[0] % q8_0BlockSize !== 0) return undefined;
    return ggmlTensorByteLength(tensor.type, elementCount(tensor));
}

/** Bytes an item of a type needs at least, used to reject absurd array counts before allocating. */
const minimumItemBytes: Record<GgufValueType, number> = {
    [GgufValueType.Uint8]: 1,
    [GgufValueType.Int8]: 1,
    [GgufValueType.Bool]: 1,
    [GgufValueType.Uint16]: 2,
    [GgufValueType.Int16]: 2,
    [GgufValueType.Uint32]: 4,
    [GgufValueType.Int32]: 4,
    [GgufValueType.Float32]: 4,
    [GgufValueType.Uint64]: 8,
    [GgufValueType.Int64]: 8,
    [GgufValueType.Float64]: 8,
    [GgufValueType.String]: 8,
    [GgufValueType.Array]: 12
};

function readValue(cursor: FileCursor, type: number, path: string): GgufMetadataValue {
    switch (type) {
        case GgufValueType.Uint8:
            return cursor.take(1).readUint8(0);
        case GgufValueType.Int8:
            return cursor.take(1).readInt8(0);
        case GgufValueType.Uint16:
            return cursor.take(2).readUint16LE(0);
        case GgufValueType.Int16:
            return cursor.take(2).readInt16LE(0);
        case GgufValueType.Uint32:
            return cursor.uint32();
        case GgufValueType.Int32:
            return cursor.take(4).readInt32LE(0);
        case GgufValueType.Float32:
            return cursor.take(4).readFloatLE(0);
        case GgufValueType.Bool:
            return cursor.take(1).readUint8(0) !== 0;
        case GgufValueType.String:
            return cursor.string();
        case GgufValueType.Uint64:
            return cursor.take(8).readBigUint64LE(0);
        case GgufValueType.Int64:
            return cursor.take(8).readBigInt64LE(0);
        case GgufValueType.Float64:
            return cursor.take(8).readDoubleLE(0);
        case GgufValueType.Array: {
            const itemType = cursor.uint32();
            const count = cursor.uint64();
            const itemBytes = minimumItemBytes[itemType as GgufValueType];
            if (itemBytes === undefined) throw new ModelLoadError("corrupt", `unknown array item type ${itemType}`, path);
            if (count * itemBytes > cursor.fileSize - cursor.position)
                throw new ModelLoadError("corrupt", `array of ${count} items does not fit in the file`, path);
            const items: GgufMetadataValue[] = [];
            for (let i = 0; i < count; i++) items.push(readValue(cursor, itemType, path));
            return {itemType, items};
        }
        default:
            throw new ModelLoadError("corrupt", `unknown metadata value type ${type}`, path);
    }
}

/** Sequential reads over a file descriptor through a 64 KiB window; reading past the end is "corrupt". */
class FileCursor {
    public position = 0;
    public readonly fileSize: number;
    private window: Buffer = Buffer.alloc(0);
    private windowStart = 0;

    public constructor(
        private readonly descriptor: number,
        private readonly path: string
    ) {
        this.fileSize = fstatSync(descriptor).size;
    }

    public take(size: number): Buffer {
        if (this.position + size > this.fileSize)
            throw new ModelLoadError("corrupt", "unexpected end of file (truncated header?)", this.path);
        const windowEnd = this.windowStart + this.window.length;
        if (this.position < this.windowStart || this.position + size > windowEnd) {
            this.window = this.readAt(this.position, Math.min(Math.max(size, 1 << 16), this.fileSize - this.position));
            this.windowStart = this.position;
        }
        const start = this.position - this.windowStart;
        this.position += size;
        return this.window.subarray(start, start + size);
    }

    public uint32(): number {
        return this.take(4).readUint32LE(0);
    }

    public uint64(): number {
        const value = this.take(8).readBigUint64LE(0);
        if (value > BigInt(Number.MAX_SAFE_INTEGER))
            throw new ModelLoadError("corrupt", `64-bit count ${value} is implausibly large`, this.path);
        return Number(value);
    }

    public string(): string {
        const length = this.uint64();
        return this.take(length).toString("utf8");
    }

    public readAt(offset: number, size: number): Buffer {
        const buffer = Buffer.alloc(size);
        let filled = 0;
        while (filled < size) {
            const read = readSync(this.descriptor, buffer, filled, size - filled, offset + filled);
            if (read === 0) throw new ModelLoadError("corrupt", "unexpected end of file", this.path);
            filled += read;
        }
        return buffer;
    }

    public close(): void {
        closeSync(this.descriptor);
    }
}

/** A folder given where a model file belongs: says so, naming the GGUF files inside it that could be meant. */
function folderMessage(path: string): string {
    let ggufFiles: string[] = [];
    try {
        ggufFiles = readdirSync(path).filter((name) => name.endsWith(".gguf"));
    } catch {
        // An unreadable folder is still a folder; the message just names no candidates.
    }
    const hint = ggufFiles.length === 0 ? "" : `; it holds ${ggufFiles.map((name) => join(path, name)).join(", ")}`;
    return `is a folder, not a GGUF model file${hint}`;
}
