import {z} from "zod";
import {commonRequestFields, notSupported} from "./commonRequestFields.js";
import {promptFieldSchema} from "./promptFieldSchema.js";

/**
 * Body of POST /v1/completions for a model of `contextSize` tokens and `vocabularySize` token ids.
 * `prompt` is text or token ids, one prompt per request (promptFieldSchema); echo, suffix and
 * best_of are refused.
 */
export function completionRequestSchema(contextSize: number, vocabularySize: number) {
    return z.strictObject({
        ...commonRequestFields,
        prompt: promptFieldSchema(contextSize, vocabularySize),
        /** The sampled token's log-probability and this many alternatives per position (OpenAI: at most 5). */
        logprobs: z.int().min(0).max(5).nullish(),
        echo: z.literal(false, {error: notSupported}).nullish(),
        suffix: z.null({error: notSupported}).optional(),
        best_of: z.literal(1, {error: notSupported}).nullish()
    });
}

export type CompletionRequest = z.infer<ReturnType<typeof completionRequestSchema>>;
