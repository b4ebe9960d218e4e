/**
 * RMSNorm as llama.cpp computes it: y = x / sqrt(mean(x²) + ε) · gain, per row of `width` values.
 * Returns the output and each row's 1/rms, which the backward pass reuses.
 */
export function rmsNormForward(
    input: Float64Array,
    gain: Float64Array,
    rows: number,
    width: number,
    epsilon: number
): {output: Float64Array; inverseRms: Float64Array} {
    const output = new Float64Array(rows * width);
    const inverseRms = new Float64Array(rows);
    for (let row = 0; row < rows; row++) {
        const offset = row * width;
        let sumOfSquares = 0;
        for (let i = 0; i < width; i++) sumOfSquares += input[offset + i] * input[offset + i];
        const scale = 1 / Math.sqrt(sumOfSquares / width + epsilon);
        inverseRms[row] = scale;
        for (let i = 0; i < width; i++) output[offset + i] = input[offset + i] * scale * gain[i];
    }
    return {output, inverseRms};
}

/**
 * Gradients of rmsNormForward: adds Σ_rows dy·x/rms to `gainGradient`, returns dx, where with
 * r = 1/rms and u = dy·gain: dx = r·u − x·r³·(u·x)/width.
 */
export function rmsNormBackward(
    input: Float64Array,
    gain: Float64Array,
    inverseRms: Float64Array,
    outputGradient: Float64Array,
    gainGradient: Float64Array,
    rows: number,
    width: number
): Float64Array {
    const inputGradient = new Float64Array(rows * width);
    for (let row = 0; row < rows; row++) {
        const offset = row * width;
        const scale = inverseRms[row];
        let dot = 0;
        for (let i = 0; i < width; i++) {
            const upstream = outputGradient[offset + i];
            gainGradient[i] += upstream * input[offset + i] * scale;
            dot += upstream * gain[i] * input[offset + i];
        }
        const correction = (scale * scale * scale * dot) / width;
        for (let i = 0; i < width; i++)
            inputGradient[offset + i] = scale * outputGradient[offset + i] * gain[i] - input[offset + i] * correction;
    }
    return inputGradient;
}
