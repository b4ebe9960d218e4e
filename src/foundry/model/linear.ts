/**
 * A bias-free linear layer on row-major data: `input` is rows × inputWidth, `weight` is
 * outputWidth × inputWidth (llama.cpp's W[out][in]), `output` = input · weightᵀ, rows × outputWidth.
 * Loops run over contiguous rows of both operands.
 */
export function linearForward(
    input: Float64Array,
    weight: Float64Array,
    rows: number,
    inputWidth: number,
    outputWidth: number
): Float64Array {
    const output = new Float64Array(rows * outputWidth);
    for (let row = 0; row < rows; row++) {
        const inputOffset = row * inputWidth;
        const outputOffset = row * outputWidth;
        for (let out = 0; out < outputWidth; out++) {
            const weightOffset = out * inputWidth;
            let sum = 0;
            for (let i = 0; i < inputWidth; i++) sum += input[inputOffset + i] * weight[weightOffset + i];
            output[outputOffset + out] = sum;
        }
    }
    return output;
}

/**
 * Gradients of linearForward: adds outputGradientᵀ · input to `weightGradient` and returns
 * outputGradient · weight (the input's gradient, rows × inputWidth).
 */
export function linearBackward(
    input: Float64Array,
    weight: Float64Array,
    outputGradient: Float64Array,
    weightGradient: Float64Array,
    rows: number,
    inputWidth: number,
    outputWidth: number
): Float64Array {
    const inputGradient = new Float64Array(rows * inputWidth);
    for (let row = 0; row < rows; row++) {
        const inputOffset = row * inputWidth;
        const outputOffset = row * outputWidth;
        for (let out = 0; out < outputWidth; out++) {
            const gradient = outputGradient[outputOffset + out];
            if (gradient === 0) continue;
            const weightOffset = out * inputWidth;
            for (let i = 0; i < inputWidth; i++) {
                inputGradient[inputOffset + i] += gradient * weight[weightOffset + i];
                weightGradient[weightOffset + i] += gradient * input[inputOffset + i];
            }
        }
    }
    return inputGradient;
}
