/**
 * The only two random decisions a verification policy may make. Policies receive a Chance instead
 * of a raw uniform generator so that the same policy code can be run either with a seeded
 * generator (SeededChance) or under exact enumeration of every outcome (enumerateOutcomes), which
 * is how lossless policies are proven exact rather than estimated.
 */
export interface Chance {
    /**
     * Bernoulli trial: true with probability `probability` (clamped to [0, 1]).
     * With a uniform u in [0, 1) the rule is u < probability, so probability 0 never accepts and
     * probability 1 always does (HF/vLLM v1 use u <= ratio, which differs only on a set of measure
     * zero but can accept a token whose target probability is exactly 0 when u = 0).
     */
    accept(probability: number): boolean;

    /**
     * Categorical draw: index i with probability weights[i] / total, over i in [0, length).
     * `total` must equal the sum of the non-negative weights (callers have it from the pass that
     * built the weights, which saves a pass over the vocabulary). Zero-weight indices are never
     * returned.
     */
    choose(weights: ArrayLike<number>, total: number, length?: number): number;
}
