import type {SamplingOptions} from "../distributions/SamplingOptions.js";
import type {BackendSequence, EvaluateOptions} from "./ModelBackend.js";

/** Logit rows, and their sampler rows where the backend computed them. */
export interface EvaluatedRows {
    readonly logits: Float64Array[];
    /** Absent where the backend has no evaluateDistributions: the caller runs processLogits. */
    readonly probabilities?: Float64Array[];
}

/**
 * One evaluation for a caller that needs sampler rows: the backend computes them where it can
 * (natively, off the event loop); otherwise only logits come back, so that the caller's own
 * processLogits is timed as sampling rather than as model time.
 */
export async function evaluateRows(
    sequence: BackendSequence,
    tokens: readonly number[],
    sampling: SamplingOptions,
    options?: EvaluateOptions
): Promise<EvaluatedRows> {
    if (sequence.evaluateDistributions != null) return sequence.evaluateDistributions(tokens, sampling, options);
    return {logits: await sequence.evaluate(tokens, options)};
}
