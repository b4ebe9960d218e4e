/** Head layout of the EAGLE-3 decoder's attention. */
export interface ChainAttentionShape {
    readonly headCount: number;
    readonly headCountKv: number;
    readonly headDimension: number;
}

/**
 * The attention of unrolled drafting step `k` (EAGLE-3's training-time test), as llama.cpp's
 * draft-eagle3 sees it: the chain rooted at position P (the pair (token[P+1], g[P]) written from the
 * target's features) drafts its step-k token at position P + k, where the head's KV cache holds the
 * target-fed step-0 rows 0..P and the chain's own rows of steps 1..k at root P. So the query of root P
 * at step k reads step-0 keys 0..P, then step j's key of root P for j = 1..k; step 0 is plain causal
 * attention.
 *
 * `keys[0]` / `values[0]` hold step 0's rows (row P = root P); `keys[j]` for j ≥ 1 and the queries
 * hold the chains' rows, row r = root rootOffset + r (chains need not start at root 0). All rotated.
 * Scores are q·k / √headDimension; query head h reads kv head ⌊h / (headCount / headCountKv)⌋.
 * Probabilities are kept per head and row in slots 0..P (step 0) and P + j (step j).
 */
export function chainAttentionForward(
    queries: Float64Array,
    keys: readonly Float64Array[],
    values: readonly Float64Array[],
    shape: ChainAttentionShape,
    rootOffset = 0
): {output: Float64Array; probabilities: Float64Array} {
    const {headCount, headDimension} = shape;
    const {step, queryWidth, keyWidth, rows, stride, group, scale} = chainGeometry(queries, keys, shape, rootOffset);
    const output = new Float64Array(queries.length);
    const probabilities = new Float64Array(headCount * rows * stride);
    for (let head = 0; head < headCount; head++) {
        const kvOffset = Math.floor(head / group) * headDimension;
        for (let row = 0; row < rows; row++) {
            const root = rootOffset + row;
            const queryOffset = row * queryWidth + head * headDimension;
            const rowOffset = (head * rows + row) * stride;
            const slots = root + 1 + step;
            let maximum = -Infinity;
            for (let slot = 0; slot < slots; slot++) {
                const tensor = keys[slotStep(slot, root)];
                const offset = slotRow(slot, root, row) * keyWidth + kvOffset;
                let score = 0;
                for (let i = 0; i < headDimension; i++) score += queries[queryOffset + i] * tensor[offset + i];
                score *= scale;
                probabilities[rowOffset + slot] = score;
                if (score > maximum) maximum = score;
            }
            let total = 0;
            for (let slot = 0; slot < slots; slot++) {
                const weight = Math.exp(probabilities[rowOffset + slot] - maximum);
                probabilities[rowOffset + slot] = weight;
                total += weight;
            }
            for (let slot = 0; slot < slots; slot++) {
                const probability = probabilities[rowOffset + slot] / total;
                probabilities[rowOffset + slot] = probability;
                const tensor = values[slotStep(slot, root)];
                const offset = slotRow(slot, root, row) * keyWidth + kvOffset;
                for (let i = 0; i < headDimension; i++) output[queryOffset + i] += probability * tensor[offset + i];
            }
        }
    }
    return {output, probabilities};
}

/**
 * Gradients of chainAttentionForward: returns ∂/∂queries and adds ∂/∂keys[j], ∂/∂values[j] into
 * `keyGradients[j]` / `valueGradients[j]` (later steps read earlier steps' rows, so the caller
 * accumulates over steps before back-propagating a step's keys and values).
 */
export function chainAttentionBackward(
    queries: Float64Array,
    keys: readonly Float64Array[],
    values: readonly Float64Array[],
    probabilities: Float64Array,
    outputGradient: Float64Array,
    keyGradients: readonly Float64Array[],
    valueGradients: readonly Float64Array[],
    shape: ChainAttentionShape,
    rootOffset = 0
): Float64Array {
    const {headCount, headDimension} = shape;
    const {step, queryWidth, keyWidth, rows, stride, group, scale} = chainGeometry(queries, keys, shape, rootOffset);
    const queryGradient = new Float64Array(queries.length);
    const probabilityGradient = new Float64Array(stride);
    for (let head = 0; head < headCount; head++) {
        const kvOffset = Math.floor(head / group) * headDimension;
        for (let row = 0; row < rows; row++) {
            const root = rootOffset + row;
            const queryOffset = row * queryWidth + head * headDimension;
            const rowOffset = (head * rows + row) * stride;
            const slots = root + 1 + step;
            // dP = dO·V, dV += P·dO; then the softmax Jacobian: dS = P ⊙ (dP − Σ P·dP).
            let weighted = 0;
            for (let slot = 0; slot < slots; slot++) {
                const source = slotStep(slot, root);
                const tensor = values[source];
                const gradient = valueGradients[source];
                const offset = slotRow(slot, root, row) * keyWidth + kvOffset;
                const probability = probabilities[rowOffset + slot];
                let dot = 0;
                for (let i = 0; i < headDimension; i++) {
                    const upstream = outputGradient[queryOffset + i];
                    dot += upstream * tensor[offset + i];
                    gradient[offset + i] += probability * upstream;
                }
                probabilityGradient[slot] = dot;
                weighted += probability * dot;
            }
            for (let slot = 0; slot < slots; slot++) {
                const scoreGradient = probabilities[rowOffset + slot] * (probabilityGradient[slot] - weighted) * scale;
                if (scoreGradient === 0) continue;
                const source = slotStep(slot, root);
                const tensor = keys[source];
                const gradient = keyGradients[source];
                const offset = slotRow(slot, root, row) * keyWidth + kvOffset;
                for (let i = 0; i < headDimension; i++) {
                    queryGradient[queryOffset + i] += scoreGradient * tensor[offset + i];
                    gradient[offset + i] += scoreGradient * queries[queryOffset + i];
                }
            }
        }
    }
    return queryGradient;
}

/** Widths and counts both directions derive from the queries, the steps' keys and the head layout. */
function chainGeometry(queries: Float64Array, keys: readonly Float64Array[], shape: ChainAttentionShape, rootOffset: number) {
    const {headCount, headCountKv, headDimension} = shape;
    const step = keys.length - 1;
    const queryWidth = headCount * headDimension;
    const rows = queries.length / queryWidth;
    return {
        step,
        queryWidth,
        keyWidth: headCountKv * headDimension,
        rows,
        stride: rootOffset + rows + step,
        group: headCount / headCountKv,
        scale: 1 / Math.sqrt(headDimension)
    };
}

/** The step whose keys and values hold attention slot `slot` of root `root`: 0 for slots 0..root, else slot − root. */
function slotStep(slot: number, root: number): number {
    return slot <= root ? 0 : slot - root;
}

/** The row of slotStep's tensor that holds the slot: the position itself in step 0, else the chain's row. */
function slotRow(slot: number, root: number, row: number): number {
    return slot <= root ? slot : row;
}
