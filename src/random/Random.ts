/**
 * The one seeded pseudo-random generator of specgate.
 *
 * Algorithm: xoshiro128** 1.1 (Blackman & Vigna, https://prng.di.unimi.it/xoshiro128starstar.c),
 * 32-bit state words, seeded by expanding the seed with SplitMix32 (Vigna's 32-bit finaliser of
 * the golden-ratio Weyl sequence, the same mixing constants as MurmurHash3's fmix32 variant below).
 * Doubles are built from two outputs as (a >>> 5) * 2^26 + (b >>> 6), divided by 2^53: 53 random
 * bits, uniform on [0, 1), the construction used by the reference implementations.
 *
 * Why our own: the output is specified entirely by 32-bit integer operations (Math.imul, >>>),
 * so a seed reproduces a run bit-for-bit on every machine and every Node version; a library
 * could change its algorithm in a minor version. The golden test compares the first outputs
 * against the published C reference compiled with the same seeding.
 *
 * Seeds are integers in [0, 2^53). Two different seeds give unrelated streams; `fork(label)`
 * derives an independent stream for a named purpose (e.g. one per sample) without advancing
 * this one.
 */
export class Random {
    private s0: number;
    private s1: number;
    private s2: number;
    private s3: number;

    public constructor(seed: number) {
        if (!Number.isSafeInteger(seed) || seed < 0) throw new RangeError(`seed must be an integer in [0, 2^53), got ${seed}`);

        // Split the 53-bit seed into two 32-bit halves and run SplitMix32 over them.
        let state = (seed >>> 0) ^ Math.imul(Math.floor(seed / 0x1_0000_0000) >>> 0, 0x85ebca6b);
        const next = (): number => {
            state = (state + 0x9e3779b9) | 0;
            let z = state;
            z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
            z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
            return (z ^ (z >>> 16)) >>> 0;
        };
        this.s0 = next();
        this.s1 = next();
        this.s2 = next();
        this.s3 = next();
        if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1; // the all-zero state is the one fixed point of xoshiro
    }

    /** Next 32-bit unsigned integer (xoshiro128**). */
    public nextUint32(): number {
        const result = Math.imul(rotateLeft(Math.imul(this.s1, 5), 7), 9) >>> 0;
        const t = this.s1 << 9;
        this.s2 ^= this.s0;
        this.s3 ^= this.s1;
        this.s1 ^= this.s2;
        this.s0 ^= this.s3;
        this.s2 ^= t;
        this.s3 = rotateLeft(this.s3, 11);
        return result;
    }

    /** Uniform double on [0, 1) with 53 random bits. */
    public nextDouble(): number {
        const high = this.nextUint32() >>> 5;
        const low = this.nextUint32() >>> 6;
        return (high * 67108864 + low) / 9007199254740992;
    }

    /** A new generator whose seed is derived from this generator's next two outputs (advances this one). */
    public split(): Random {
        const high = this.nextUint32() & 0x1f_ffff;
        const low = this.nextUint32();
        return new Random(high * 0x1_0000_0000 + low);
    }

    /** Internal state, for checkpointing a run (restore with `Random.fromState`). */
    public getState(): [number, number, number, number] {
        return [this.s0 >>> 0, this.s1 >>> 0, this.s2 >>> 0, this.s3 >>> 0];
    }

    public static fromState(state: readonly [number, number, number, number]): Random {
        const random = new Random(0);
        [random.s0, random.s1, random.s2, random.s3] = state.map((word) => word | 0) as [number, number, number, number];
        if ((random.s0 | random.s1 | random.s2 | random.s3) === 0)
            throw new RangeError("the all-zero state is not a valid xoshiro128** state");
        return random;
    }
}

function rotateLeft(value: number, shift: number): number {
    return (value << shift) | (value >>> (32 - shift));
}
