/**
 * C = A · Bᵀ for row-major A (m × k) and B (n × k), C m × n, computed 2×2 outputs at a time: four
 * accumulators share each pair of loads, which halves the loads of the dot-product loop (the head's
 * training time is almost all matrix products).
 */
export function multiplyTransposed(a: Float64Array, b: Float64Array, m: number, k: number, n: number): Float64Array {
    const c = new Float64Array(m * n);
    const evenM = m - (m % 2);
    const evenN = n - (n % 2);
    for (let i = 0; i < evenM; i += 2) {
        const a0 = i * k;
        const a1 = a0 + k;
        for (let j = 0; j < evenN; j += 2) {
            const b0 = j * k;
            const b1 = b0 + k;
            let c00 = 0;
            let c01 = 0;
            let c10 = 0;
            let c11 = 0;
            for (let p = 0; p < k; p++) {
                const x0 = a[a0 + p];
                const x1 = a[a1 + p];
                const y0 = b[b0 + p];
                const y1 = b[b1 + p];
                c00 += x0 * y0;
                c01 += x0 * y1;
                c10 += x1 * y0;
                c11 += x1 * y1;
            }
            c[i * n + j] = c00;
            c[i * n + j + 1] = c01;
            c[(i + 1) * n + j] = c10;
            c[(i + 1) * n + j + 1] = c11;
        }
        for (let j = evenN; j < n; j++) {
            c[i * n + j] = dot(a, a0, b, j * k, k);
            c[(i + 1) * n + j] = dot(a, a1, b, j * k, k);
        }
    }
    for (let i = evenM; i < m; i++) for (let j = 0; j < n; j++) c[i * n + j] = dot(a, i * k, b, j * k, k);
    return c;
}

function dot(a: Float64Array, aOffset: number, b: Float64Array, bOffset: number, length: number): number {
    let sum = 0;
    for (let p = 0; p < length; p++) sum += a[aOffset + p] * b[bOffset + p];
    return sum;
}

/** The transpose of a row-major rows × columns matrix. */
export function transpose(values: Float64Array, rows: number, columns: number): Float64Array {
    const result = new Float64Array(values.length);
    for (let row = 0; row < rows; row++)
        for (let column = 0; column < columns; column++) result[column * rows + row] = values[row * columns + column];
    return result;
}

/** linearForward (src/foundry/model/linear.ts) through multiplyTransposed: input · weightᵀ. */
export function blockedLinearForward(
    input: Float64Array,
    weight: Float64Array,
    rows: number,
    inputWidth: number,
    outputWidth: number
): Float64Array {
    return multiplyTransposed(input, weight, rows, inputWidth, outputWidth);
}

/**
 * linearBackward through multiplyTransposed: adds outputGradientᵀ · input to `weightGradient` and
 * returns outputGradient · weight.
 */
export function blockedLinearBackward(
    input: Float64Array,
    weight: Float64Array,
    outputGradient: Float64Array,
    weightGradient: Float64Array,
    rows: number,
    inputWidth: number,
    outputWidth: number
): Float64Array {
    const outputGradientT = transpose(outputGradient, rows, outputWidth);
    const weightUpdate = multiplyTransposed(outputGradientT, transpose(input, rows, inputWidth), outputWidth, rows, inputWidth);
    for (let i = 0; i < weightUpdate.length; i++) weightGradient[i] += weightUpdate[i];
    return multiplyTransposed(outputGradient, transpose(weight, outputWidth, inputWidth), rows, outputWidth, inputWidth);
}
