import type {EvaluateOptions, ModelBackend} from "./ModelBackend.js";

/**
 * Logit rows of `tokens` from a fresh sequence that is disposed afterwards: one-shot scoring
 * (teacher forcing, distillation targets, validation loss) must not leave KV-cache cells behind.
 */
export async function evaluateOnce(model: ModelBackend, tokens: readonly number[], options?: EvaluateOptions): Promise<Float64Array[]> {
    const sequence = await model.createSequence();
    try {
        return await sequence.evaluate(tokens, options);
    } finally {
        await sequence.dispose();
    }
}
