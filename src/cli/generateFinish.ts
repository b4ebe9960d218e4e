import type {GenerationResult} from "../engine/generate.js";
import type {FinishReason} from "../engine/StopDetector.js";

/**
 * Why `specgate generate` stopped, as it reports it: the engine's reason, except that a "length"
 * finish before --max-tokens tokens is "context" (the model's context filled up first), so a cut
 * answer is never reported as a complete one.
 */
export function generateFinish(result: Pick<GenerationResult, "finishReason" | "tokens">, maxTokens: number): FinishReason | "context" {
    return result.finishReason === "length" && result.tokens.length < maxTokens ? "context" : result.finishReason;
}
