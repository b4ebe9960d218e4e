/**
 * Rotary position embedding in llama.cpp's "normal" mode (LLAMA_ROPE_TYPE_NORM, which
 * llama_model_rope_type gives LLM_ARCH_LLAMA): within each head, the consecutive pairs
 * (x[2i], x[2i+1]) are rotated by the angle pos·base^(−2i/headDimension):
 *   y[2i] = x[2i]·cos − x[2i+1]·sin,  y[2i+1] = x[2i]·sin + x[2i+1]·cos.
 * (NEOX mode would pair x[i] with x[i + headDimension/2]; HF checkpoints are permuted into the
 * normal order by convert_hf_to_gguf.py, so a llama GGUF always uses consecutive pairs.)
 *
 * The angles are computed as ggml-cpu's ggml_rope_cache_init does, in float32: θ starts at the
 * position and is multiplied by float32 base^(−2/headDimension) once per pair. With that, the
 * rotation differs from llama.cpp's only by the rounding of cos and sin, far below the parity tolerance.
 */
export class RopeTable {
    private readonly cosines: Float64Array;
    private readonly sines: Float64Array;
    private readonly pairs: number;

    public constructor(
        public readonly length: number,
        public readonly headDimension: number,
        base: number
    ) {
        this.pairs = headDimension / 2;
        this.cosines = new Float64Array(length * this.pairs);
        this.sines = new Float64Array(length * this.pairs);
        const thetaScale = Math.fround(Math.pow(base, -2 / headDimension));
        for (let position = 0; position < length; position++) {
            let theta = Math.fround(position);
            for (let pair = 0; pair < this.pairs; pair++) {
                this.cosines[position * this.pairs + pair] = Math.fround(Math.cos(theta));
                this.sines[position * this.pairs + pair] = Math.fround(Math.sin(theta));
                theta = Math.fround(theta * thetaScale);
            }
        }
    }

    /**
     * Rotates, in place, every head of `values` (rows × heads·headDimension; row = position).
     * `inverse` applies the transposed rotation, which is the backward pass of the forward one.
     * Row r sits at position firstPosition + r.
     */
    public rotate(values: Float64Array, rows: number, heads: number, inverse = false, firstPosition = 0): void {
        if (firstPosition + rows > this.length)
            throw new RangeError(`${firstPosition + rows} positions exceed the rope table's ${this.length}`);
        const sign = inverse ? -1 : 1;
        const width = heads * this.headDimension;
        for (let position = 0; position < rows; position++) {
            const tableOffset = (firstPosition + position) * this.pairs;
            for (let head = 0; head < heads; head++) {
                const offset = position * width + head * this.headDimension;
                for (let pair = 0; pair < this.pairs; pair++) {
                    const cos = this.cosines[tableOffset + pair];
                    const sin = sign * this.sines[tableOffset + pair];
                    const even = values[offset + 2 * pair];
                    const odd = values[offset + 2 * pair + 1];
                    values[offset + 2 * pair] = even * cos - odd * sin;
                    values[offset + 2 * pair + 1] = even * sin + odd * cos;
                }
            }
        }
    }
}
