/** Shapes of one causal self-attention call over a single sequence. */
export interface AttentionShape {
    readonly length: number;
    readonly headCount: number;
    readonly headCountKv: number;
    readonly headDimension: number;
}

/**
 * Multi-head causal attention with grouped-query sharing, as llama.cpp's graph computes it:
 * query head h reads key/value head ⌊h / (headCount / headCountKv)⌋ (ggml_mul_mat's broadcast),
 * scores are q·k / sqrt(headDimension), position i attends to positions 0..i.
 * `queries` is length × headCount·headDimension, `keys` and `values` length × headCountKv·headDimension,
 * all already rotated. Returns the output (same shape as queries) and the attention probabilities
 * (headCount × length × length, upper triangle zero) that the backward pass reuses.
 */
export function causalAttentionForward(
    queries: Float64Array,
    keys: Float64Array,
    values: Float64Array,
    shape: AttentionShape
): {output: Float64Array; probabilities: Float64Array} {
    const {length, headCount, headCountKv, headDimension} = shape;
    const group = headCount / headCountKv;
    const queryWidth = headCount * headDimension;
    const keyWidth = headCountKv * headDimension;
    const scale = 1 / Math.sqrt(headDimension);
    const output = new Float64Array(length * queryWidth);
    const probabilities = new Float64Array(headCount * length * length);
    for (let head = 0; head < headCount; head++) {
        const kvOffset = Math.floor(head / group) * headDimension;
        for (let i = 0; i < length; i++) {
            const queryOffset = i * queryWidth + head * headDimension;
            const rowOffset = (head * length + i) * length;
            let maximum = -Infinity;
            for (let j = 0; j <= i; j++) {
                const keyOffset = j * keyWidth + kvOffset;
                let score = 0;
                for (let k = 0; k < headDimension; k++) score += queries[queryOffset + k] * keys[keyOffset + k];
                score *= scale;
                probabilities[rowOffset + j] = score;
                if (score > maximum) maximum = score;
            }
            let total = 0;
            for (let j = 0; j <= i; j++) {
                const weight = Math.exp(probabilities[rowOffset + j] - maximum);
                probabilities[rowOffset + j] = weight;
                total += weight;
            }
            for (let j = 0; j <= i; j++) {
                const probability = probabilities[rowOffset + j] / total;
                probabilities[rowOffset + j] = probability;
                const valueOffset = j * keyWidth + kvOffset;
                for (let k = 0; k < headDimension; k++) output[queryOffset + k] += probability * values[valueOffset + k];
            }
        }
    }
    return {output, probabilities};
}

/** Gradients of causalAttentionForward with respect to its (rotated) queries, keys and values. */
export function causalAttentionBackward(
    queries: Float64Array,
    keys: Float64Array,
    values: Float64Array,
    probabilities: Float64Array,
    outputGradient: Float64Array,
    shape: AttentionShape
): {queryGradient: Float64Array; keyGradient: Float64Array; valueGradient: Float64Array} {
    const {length, headCount, headCountKv, headDimension} = shape;
    const group = headCount / headCountKv;
    const queryWidth = headCount * headDimension;
    const keyWidth = headCountKv * headDimension;
    const scale = 1 / Math.sqrt(headDimension);
    const queryGradient = new Float64Array(queries.length);
    const keyGradient = new Float64Array(keys.length);
    const valueGradient = new Float64Array(values.length);
    const probabilityGradient = new Float64Array(length);
    for (let head = 0; head < headCount; head++) {
        const kvOffset = Math.floor(head / group) * headDimension;
        for (let i = 0; i < length; i++) {
            const queryOffset = i * queryWidth + head * headDimension;
            const rowOffset = (head * length + i) * length;
            // dP = dO·V, dV += P·dO; then the softmax Jacobian: dS = P ⊙ (dP − Σ P·dP).
            let weighted = 0;
            for (let j = 0; j <= i; j++) {
                const valueOffset = j * keyWidth + kvOffset;
                const probability = probabilities[rowOffset + j];
                let dot = 0;
                for (let k = 0; k < headDimension; k++) {
                    const upstream = outputGradient[queryOffset + k];
                    dot += upstream * values[valueOffset + k];
                    valueGradient[valueOffset + k] += probability * upstream;
                }
                probabilityGradient[j] = dot;
                weighted += probability * dot;
            }
            for (let j = 0; j <= i; j++) {
                const scoreGradient = probabilities[rowOffset + j] * (probabilityGradient[j] - weighted) * scale;
                if (scoreGradient === 0) continue;
                const keyOffset = j * keyWidth + kvOffset;
                for (let k = 0; k < headDimension; k++) {
                    queryGradient[queryOffset + k] += scoreGradient * keys[keyOffset + k];
                    keyGradient[keyOffset + k] += scoreGradient * queries[queryOffset + k];
                }
            }
        }
    }
    return {queryGradient, keyGradient, valueGradient};
}
