import {randomBytes} from "node:crypto";
import {rename, unlink, writeFile} from "node:fs/promises";
import {trackTemporaryFile} from "../io/temporaryFiles.js";
import {InvalidInputError} from "../errors.js";
import {endianness} from "node:os";
import {float32ArrayToFloat16Bits, float32ToFloat16Bits} from "./float16.js";
import {GgmlTensorType, ggmlTensorByteLength, q8_0BlockSize} from "./GgmlTensorType.js";
import type {GgufArray, GgufMetadataEntry, GgufMetadataValue} from "./GgufMetadataValue.js";
import {GgufValueType} from "./GgufValueType.js";
import {quantizeQ8_0} from "./q8_0.js";

/** Typed arrays use the host's byte order; GGUF is little-endian. */
const littleEndianHost = endianness() === "LE";

/** "GGUF" read as a little-endian uint32. */
export const ggufMagic = 0x46554747;
export const ggufVersion = 3;
/** Alignment of the tensor data when `general.alignment` is absent (gguf.h GGUF_DEFAULT_ALIGNMENT). */
export const ggufDefaultAlignment = 32;
/** ggml's GGML_MAX_NAME includes the terminating NUL. */
const maxTensorNameBytes = 63;
const maxDimensions = 4;

/** A tensor's name, ggml dimensions and storage type: what the header says of it. */
export interface GgufTensorDescriptor {
    readonly name: string;
    readonly dimensions: readonly number[];
    readonly type: GgmlTensorType;
}

interface PendingTensor extends GgufTensorDescriptor {
    readonly data: Uint8Array;
}

/**
 * Builds a GGUF v3 file: typed metadata key/values, then tensor descriptors, then the tensor data,
 * each tensor starting at a multiple of the alignment (the data section itself starts aligned too,
 * and the last tensor is padded, because gguf_init reads the padded total).
 *
 * Dimensions are given in ggml order: `dimensions[0]` is the contiguous (innermost) axis, so a matrix
 * with `rows` rows of `columns` values, stored row-major, has dimensions `[columns, rows]`.
 * Everything is little-endian. `writeFile` is atomic (temp file in the same directory, then rename),
 * so a crash never leaves a half-written model where a loader could pick it up.
 */
export class GgufWriter {
    private readonly metadata = new Map<string, GgufMetadataEntry>();
    private readonly tensors: PendingTensor[] = [];
    private readonly alignment: number;

    public constructor(options: {alignment?: number} = {}) {
        this.alignment = options.alignment ?? ggufDefaultAlignment;
        if (!Number.isInteger(this.alignment) || this.alignment <= 0 || (this.alignment & (this.alignment - 1)) !== 0)
            throw new InvalidInputError(`must be a positive power of two, got ${options.alignment}`, "alignment");
        if (this.alignment !== ggufDefaultAlignment) this.set("general.alignment", GgufValueType.Uint32, this.alignment);
    }

    /** Sets a metadata key; values are checked against the type now, so errors point at the key. */
    public set(key: string, type: GgufValueType, value: GgufMetadataValue): this {
        if (key.length === 0) throw new InvalidInputError("metadata key must not be empty", "key");
        if (this.metadata.has(key)) throw new InvalidInputError("duplicate metadata key", key);
        checkValue(type, value, key);
        this.metadata.set(key, {type, value});
        return this;
    }

    public setString(key: string, value: string): this {
        return this.set(key, GgufValueType.String, value);
    }

    public setUint32(key: string, value: number): this {
        return this.set(key, GgufValueType.Uint32, value);
    }

    public setInt32(key: string, value: number): this {
        return this.set(key, GgufValueType.Int32, value);
    }

    public setFloat32(key: string, value: number): this {
        return this.set(key, GgufValueType.Float32, value);
    }

    public setBool(key: string, value: boolean): this {
        return this.set(key, GgufValueType.Bool, value);
    }

    public setArray(key: string, itemType: GgufValueType, items: readonly GgufMetadataValue[]): this {
        return this.set(key, GgufValueType.Array, {itemType, items});
    }

    /** Adds a tensor; `values` are converted to `type` now (F16 rounds to nearest even, Q8_0 as ggml's reference). */
    public addTensor(name: string, dimensions: readonly number[], type: GgmlTensorType, values: Float32Array): this {
        checkTensorDescriptor({name, dimensions, type});
        if (this.tensors.some((tensor) => tensor.name === name)) throw new InvalidInputError("duplicate tensor name", name);
        const elementCount = tensorElementCount(dimensions);
        if (elementCount !== values.length)
            throw new InvalidInputError(`dimensions [${dimensions.join(", ")}] need ${elementCount} values, got ${values.length}`, name);
        for (let i = 0; i < values.length; i++)
            if (!Number.isFinite(values[i])) throw new InvalidInputError(`value ${i} is not finite (${values[i]})`, name);

        this.tensors.push({name, dimensions: [...dimensions], type, data: encodeTensorValues(type, values)});
        return this;
    }

    /** The complete file contents. */
    public toBuffer(): Buffer {
        const sink = new ByteSink();
        this.writeHeader(sink, this.tensors);
        for (const tensor of this.tensors) {
            sink.bytes(tensor.data);
            sink.padTo(this.alignment);
        }
        return sink.toBuffer();
    }

    /**
     * Everything before the tensor data, for a writer that streams the data itself: the metadata set
     * so far and the descriptors of `tensors` (in this order, each at the next aligned offset),
     * padded to the alignment. Their data must follow in the same order, each padded to the alignment.
     */
    public headerFor(tensors: readonly GgufTensorDescriptor[]): Buffer {
        const names = new Set<string>();
        for (const tensor of tensors) {
            checkTensorDescriptor(tensor);
            if (names.has(tensor.name)) throw new InvalidInputError("duplicate tensor name", tensor.name);
            names.add(tensor.name);
        }
        const sink = new ByteSink();
        this.writeHeader(sink, tensors);
        return sink.toBuffer();
    }

    /** The alignment every tensor's data starts at (and is padded to). */
    public get dataAlignment(): number {
        return this.alignment;
    }

    private writeHeader(sink: ByteSink, tensors: readonly GgufTensorDescriptor[]): void {
        sink.uint32(ggufMagic);
        sink.uint32(ggufVersion);
        sink.uint64(tensors.length);
        sink.uint64(this.metadata.size);
        for (const [key, entry] of this.metadata) {
            sink.string(key);
            sink.uint32(entry.type);
            writeValue(sink, entry.type, entry.value);
        }

        let dataOffset = 0;
        for (const tensor of tensors) {
            sink.string(tensor.name);
            sink.uint32(tensor.dimensions.length);
            for (const size of tensor.dimensions) sink.uint64(size);
            sink.uint32(tensor.type);
            sink.uint64(dataOffset);
            dataOffset = alignUp(dataOffset + ggmlTensorByteLength(tensor.type, tensorElementCount(tensor.dimensions)), this.alignment);
        }
        sink.padTo(this.alignment);
    }

    /** Writes the file atomically: a temp file next to `path`, then a rename over it. */
    public async writeFile(path: string): Promise<void> {
        const temporaryPath = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
        const untrack = trackTemporaryFile(temporaryPath);
        try {
            await writeFile(temporaryPath, this.toBuffer());
            await rename(temporaryPath, path);
        } catch (error) {
            await unlink(temporaryPath).catch(() => undefined);
            throw error;
        } finally {
            untrack();
        }
    }
}

function tensorElementCount(dimensions: readonly number[]): number {
    return dimensions.reduce((product, size) => product * size, 1);
}

/** Name length, dimension count and sizes, and Q8_0's block multiple; throws naming the tensor. */
function checkTensorDescriptor({name, dimensions, type}: GgufTensorDescriptor): void {
    const nameBytes = Buffer.byteLength(name, "utf8");
    if (nameBytes === 0 || nameBytes > maxTensorNameBytes)
        throw new InvalidInputError(`tensor name must have 1..${maxTensorNameBytes} bytes`, "name");
    if (dimensions.length === 0 || dimensions.length > maxDimensions)
        throw new InvalidInputError(`a tensor has 1..${maxDimensions} dimensions, got ${dimensions.length}`, name);
    for (const size of dimensions)
        if (!Number.isSafeInteger(size) || size <= 0)
            throw new InvalidInputError(`dimensions must be positive integers, got [${dimensions.join(", ")}]`, name);
    if (type === GgmlTensorType.Q8_0 && dimensions[0] % q8_0BlockSize !== 0)
        throw new InvalidInputError(`Q8_0 needs the first dimension to be a multiple of ${q8_0BlockSize}, got ${dimensions[0]}`, name);
}

/** `values` stored as `type` (F16 rounds to nearest even, Q8_0 as ggml's reference); Q8_0 needs whole blocks. */
export function encodeTensorValues(type: GgmlTensorType, values: Float32Array): Uint8Array {
    switch (type) {
        case GgmlTensorType.F32: {
            const copy = new Float32Array(values);
            return new Uint8Array(copy.buffer);
        }
        case GgmlTensorType.F16: {
            if (littleEndianHost) return new Uint8Array(float32ArrayToFloat16Bits(values).buffer);
            const bytes = new Uint8Array(ggmlTensorByteLength(type, values.length));
            const view = new DataView(bytes.buffer);
            for (let i = 0; i < values.length; i++) view.setUint16(i * 2, float32ToFloat16Bits(values[i]), true);
            return bytes;
        }
        case GgmlTensorType.Q8_0:
            return quantizeQ8_0(values);
        default:
            throw new InvalidInputError(`unsupported tensor type ${String(type)}`, "type");
    }
}

const integerRanges: ReadonlyMap<GgufValueType, readonly [bigint, bigint]> = new Map([
    [GgufValueType.Uint8, [0n, 0xffn]],
    [GgufValueType.Int8, [-0x80n, 0x7fn]],
    [GgufValueType.Uint16, [0n, 0xffffn]],
    [GgufValueType.Int16, [-0x8000n, 0x7fffn]],
    [GgufValueType.Uint32, [0n, 0xffff_ffffn]],
    [GgufValueType.Int32, [-0x8000_0000n, 0x7fff_ffffn]],
    [GgufValueType.Uint64, [0n, 0xffff_ffff_ffff_ffffn]],
    [GgufValueType.Int64, [-0x8000_0000_0000_0000n, 0x7fff_ffff_ffff_ffffn]]
]);

function checkValue(type: GgufValueType, value: GgufMetadataValue, field: string): void {
    const range = integerRanges.get(type);
    if (range !== undefined) {
        const is64Bit = type === GgufValueType.Uint64 || type === GgufValueType.Int64;
        const integer =
            typeof value === "bigint" && is64Bit
                ? value
                : typeof value === "number" && Number.isSafeInteger(value)
                  ? BigInt(value)
                  : undefined;
        if (integer === undefined || integer < range[0] || integer > range[1])
            throw new InvalidInputError(
                `${GgufValueType[type]} needs an integer in [${range[0]}, ${range[1]}], got ${String(value)}`,
                field
            );
        return;
    }
    switch (type) {
        case GgufValueType.Float32:
        case GgufValueType.Float64:
            if (typeof value !== "number") throw new InvalidInputError(`${GgufValueType[type]} needs a number, got ${typeof value}`, field);
            return;
        case GgufValueType.Bool:
            if (typeof value !== "boolean") throw new InvalidInputError(`Bool needs a boolean, got ${typeof value}`, field);
            return;
        case GgufValueType.String:
            if (typeof value !== "string") throw new InvalidInputError(`String needs a string, got ${typeof value}`, field);
            return;
        case GgufValueType.Array: {
            if (typeof value !== "object" || !("items" in value)) throw new InvalidInputError("Array needs {itemType, items}", field);
            if (GgufValueType[value.itemType] === undefined)
                throw new InvalidInputError(`unknown array item type ${String(value.itemType)}`, field);
            value.items.forEach((item, index) => checkValue(value.itemType, item, `${field}[${index}]`));
            return;
        }
        default:
            throw new InvalidInputError(`unknown metadata type ${String(type)}`, field);
    }
}

function writeValue(sink: ByteSink, type: GgufValueType, value: GgufMetadataValue): void {
    switch (type) {
        case GgufValueType.Uint8:
            return sink.fixed(1, (view) => view.setUint8(0, value as number));
        case GgufValueType.Int8:
            return sink.fixed(1, (view) => view.setInt8(0, value as number));
        case GgufValueType.Uint16:
            return sink.fixed(2, (view) => view.setUint16(0, value as number, true));
        case GgufValueType.Int16:
            return sink.fixed(2, (view) => view.setInt16(0, value as number, true));
        case GgufValueType.Uint32:
            return sink.uint32(value as number);
        case GgufValueType.Int32:
            return sink.fixed(4, (view) => view.setInt32(0, value as number, true));
        case GgufValueType.Float32:
            return sink.fixed(4, (view) => view.setFloat32(0, value as number, true));
        case GgufValueType.Bool:
            return sink.fixed(1, (view) => view.setUint8(0, value === true ? 1 : 0));
        case GgufValueType.String:
            return sink.string(value as string);
        case GgufValueType.Uint64:
            return sink.fixed(8, (view) => view.setBigUint64(0, BigInt(value as number | bigint), true));
        case GgufValueType.Int64:
            return sink.fixed(8, (view) => view.setBigInt64(0, BigInt(value as number | bigint), true));
        case GgufValueType.Float64:
            return sink.fixed(8, (view) => view.setFloat64(0, value as number, true));
        case GgufValueType.Array: {
            const array = value as GgufArray;
            sink.uint32(array.itemType);
            sink.uint64(array.items.length);
            for (const item of array.items) writeValue(sink, array.itemType, item);
            return;
        }
    }
}

function alignUp(offset: number, alignment: number): number {
    return Math.ceil(offset / alignment) * alignment;
}

/** An append-only little-endian byte buffer that grows by doubling. */
class ByteSink {
    private buffer = new Uint8Array(1 << 16);
    private view = new DataView(this.buffer.buffer);
    private length = 0;

    public fixed(size: number, write: (view: DataView) => void): void {
        this.reserve(size);
        write(new DataView(this.buffer.buffer, this.length, size));
        this.length += size;
    }

    public uint32(value: number): void {
        this.reserve(4);
        this.view.setUint32(this.length, value, true);
        this.length += 4;
    }

    public uint64(value: number): void {
        this.reserve(8);
        this.view.setBigUint64(this.length, BigInt(value), true);
        this.length += 8;
    }

    /** A GGUF string: uint64 byte length, then UTF-8 bytes without a terminator. */
    public string(value: string): void {
        const encoded = Buffer.from(value, "utf8");
        this.uint64(encoded.length);
        this.bytes(encoded);
    }

    public bytes(data: Uint8Array): void {
        this.reserve(data.length);
        this.buffer.set(data, this.length);
        this.length += data.length;
    }

    public padTo(alignment: number): void {
        const padding = alignUp(this.length, alignment) - this.length;
        this.reserve(padding);
        this.buffer.fill(0, this.length, this.length + padding);
        this.length += padding;
    }

    public toBuffer(): Buffer {
        return Buffer.from(this.buffer.buffer, 0, this.length);
    }

    private reserve(size: number): void {
        if (this.length + size <= this.buffer.length) return;
        let capacity = this.buffer.length;
        while (capacity < this.length + size) capacity *= 2;
        const grown = new Uint8Array(capacity);
        grown.set(this.buffer.subarray(0, this.length));
        this.buffer = grown;
        this.view = new DataView(grown.buffer);
    }
}
