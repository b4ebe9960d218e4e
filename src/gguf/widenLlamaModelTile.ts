import {Random} from "../random/Random.js";
import {GgmlTensorType, ggmlTensorByteLength, q8_0BlockSize} from "./GgmlTensorType.js";
import {encodeTensorValues} from "./GgufWriter.js";

/**
 * Values with unit standard deviation repeated from one seeded block: value i of the stream is
 * block[i mod length]. It fills billions of weights by copying instead of drawing each one, and a
 * row of stream values can be copied already encoded (F32, F16, or whole Q8_0 blocks, the length
 * being a whole number of blocks). The length is a prime number of blocks, so rows of any width
 * start at different places in it.
 */
export class TiledNoise {
    public static readonly length = 2_053 * q8_0BlockSize;
    private readonly unit: Float32Array;
    private readonly scaled = new Map<number, Float32Array>();
    private readonly encoded = new Map<string, Uint8Array>();

    /** Uniform on [-√3, √3) (standard deviation 1), from integer arithmetic only, so a seed gives the same bytes everywhere. */
    public constructor(seed: number) {
        const random = new Random(seed);
        this.unit = new Float32Array(TiledNoise.length);
        for (let i = 0; i < this.unit.length; i++) this.unit[i] = (2 * (random.nextUint32() / 0x1_0000_0000) - 1) * Math.sqrt(3);
    }

    /** Writes `count` values of the stream starting at `index`, times `scale`, into out[at, at + count). */
    public fill(out: Float32Array, at: number, count: number, index: number, scale: number): void {
        if (scale === 0) {
            out.fill(0, at, at + count);
            return;
        }
        const block = this.block(scale);
        this.copyRuns(index, count, (position, done, run) => out.set(block.subarray(position, position + run), at + done));
    }

    /**
     * Writes the encoding as `type` of `count` stream values from `index` (times `scale`) into
     * out[at, …). Q8_0 needs `index` and `count` to be whole blocks; each block's encoding is the
     * same wherever it is cut, so the bytes equal encoding the values themselves.
     */
    public copyEncoded(type: GgmlTensorType, scale: number, out: Uint8Array, at: number, index: number, count: number): void {
        if (type === GgmlTensorType.Q8_0 && (index % q8_0BlockSize !== 0 || count % q8_0BlockSize !== 0))
            throw new RangeError(`Q8_0 copies whole blocks, got index ${index} and count ${count}`);
        if (scale === 0) {
            // +0 in every type (a negative value times 0 would store -0).
            out.fill(0, at, at + ggmlTensorByteLength(type, count));
            return;
        }
        const bytes = this.encodedBlock(type, scale);
        const bytesOf = (values: number): number => ggmlTensorByteLength(type, values);
        this.copyRuns(index, count, (position, done, run) =>
            out.set(bytes.subarray(bytesOf(position), bytesOf(position + run)), at + bytesOf(done))
        );
    }

    private copyRuns(index: number, count: number, copy: (position: number, done: number, run: number) => void): void {
        let position = index % TiledNoise.length;
        for (let done = 0; done < count; position = 0) {
            const run = Math.min(count - done, TiledNoise.length - position);
            copy(position, done, run);
            done += run;
        }
    }

    private block(scale: number): Float32Array {
        let block = this.scaled.get(scale);
        if (block === undefined) {
            block = scale === 1 ? this.unit : this.unit.map((value) => value * scale);
            this.scaled.set(scale, block);
        }
        return block;
    }

    private encodedBlock(type: GgmlTensorType, scale: number): Uint8Array {
        const key = `${type}:${scale}`;
        let bytes = this.encoded.get(key);
        if (bytes === undefined) {
            bytes = encodeTensorValues(type, this.block(scale));
            this.encoded.set(key, bytes);
        }
        return bytes;
    }
}
