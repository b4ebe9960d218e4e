import {argmax} from "../distributions/argmax.js";

/**
 * The Calibrated SD paper's Semantic Consistency Gating, in logit space: the candidate x passes iff
 * z(x) − z(t*) ≥ ln τ, t* the target's top token — equivalently p(x)/p(t*) ≥ τ under the unwarped
 * softmax, and invariant to temperature. Uses raw logits when given, else ln p (identical up to a
 * constant for an untruncated row).
 */
export function logitGapToTop(row: Float64Array, draftToken: number, rowIsLogits: boolean): {gap: number; topToken: number} {
    const topToken = argmax(row);
    const gap = rowIsLogits ? row[draftToken] - row[topToken] : Math.log(row[draftToken]) - Math.log(row[topToken]);
    return {gap, topToken};
}
