import {Random} from "../random/Random.js";

/**
 * Values with unit standard deviation repeated from one seeded block: value i of a stream is
 * block[(start + i) mod length]. It fills billions of weights by copying instead of drawing each one;
 * the block length is prime, so rows of any width start at different places in it.
 */
export class TiledNoise {
    public static readonly blockLength = 65_537;
    private readonly scaled = new Map<number, Float32Array>();

    /** Uniform on [-√3, √3) (standard deviation 1), from integer arithmetic only, so a seed gives the same bytes everywhere. */
    public constructor(seed: number) {
        const random = new Random(seed);
        const block = new Float32Array(TiledNoise.blockLength);
        for (let i = 0; i < block.length; i++) block[i] = (2 * (random.nextUint32() / 0x1_0000_0000) - 1) * Math.sqrt(3);
        this.scaled.set(1, block);
    }

    /** Writes `count` values of the stream starting at `index`, times `scale`, into out[at, at + count). */
    public fill(out: Float32Array, at: number, count: number, index: number, scale: number): void {
        if (scale === 0) {
            out.fill(0, at, at + count);
            return;
        }
        const block = this.block(scale);
        let position = index % block.length;
        let done = 0;
        while (done < count) {
            const run = Math.min(count - done, block.length - position);
            out.set(block.subarray(position, position + run), at + done);
            done += run;
            position = 0;
        }
    }

    private block(scale: number): Float32Array {
        let block = this.scaled.get(scale);
        if (block === undefined) {
            const unit = this.scaled.get(1)!;
            block = new Float32Array(unit.length);
            for (let i = 0; i < unit.length; i++) block[i] = unit[i] * scale;
            this.scaled.set(scale, block);
        }
        return block;
    }
}
