/** SwiGLU's gate: silu(gate)·up elementwise, silu(z) = z·σ(z) (llama.cpp's LLM_FFN_SILU with LLM_FFN_PAR). */
export function swigluForward(gate: Float64Array, up: Float64Array): Float64Array {
    const output = new Float64Array(gate.length);
    for (let i = 0; i < gate.length; i++) {
        const z = gate[i];
        output[i] = (z / (1 + Math.exp(-z))) * up[i];
    }
    return output;
}

/** Gradients of swigluForward: d gate = dy·up·σ(z)(1 + z(1 − σ(z))), d up = dy·silu(z). */
export function swigluBackward(
    gate: Float64Array,
    up: Float64Array,
    outputGradient: Float64Array
): {gateGradient: Float64Array; upGradient: Float64Array} {
    const gateGradient = new Float64Array(gate.length);
    const upGradient = new Float64Array(gate.length);
    for (let i = 0; i < gate.length; i++) {
        const z = gate[i];
        const sigmoid = 1 / (1 + Math.exp(-z));
        upGradient[i] = outputGradient[i] * z * sigmoid;
        gateGradient[i] = outputGradient[i] * up[i] * sigmoid * (1 + z * (1 - sigmoid));
    }
    return {gateGradient, upGradient};
}
