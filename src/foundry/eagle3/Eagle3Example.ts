/**
 * One training sequence of the head: the target's tokens and, per position, the target's hidden
 * states at the head's three layers (what llama.cpp's draft-eagle3 extracts while the target decodes).
 */
export interface Eagle3Example {
    /** tokens[0..L−1]: prompt and the target's own continuation. */
    readonly tokens: readonly number[];
    /**
     * At least L − 2 rows of 3·targetHiddenSize values: row P is the inputs of the three target layers
     * at position P (while the target reads tokens[P]), in targetLayers order.
     */
    readonly features: Float64Array;
    /**
     * First root whose drafting chain is unrolled past step 0 (default 0). Roots before it (prompt
     * positions, where drafting never starts) train step 0 alone and still fill the head's KV cache.
     */
    readonly chainStart?: number;
}
