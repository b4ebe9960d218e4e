import {z} from "zod";
import {commonRequestFields, notSupported} from "./commonRequestFields.js";

const tokenIds = z.array(z.int().min(0).max(2 ** 31 - 1)).min(1).max(1_000_000);

/**
 * Body of POST /v1/completions. `prompt` is text or token ids, one prompt per request (a list of
 * one is accepted, as OpenAI clients send it); logprobs, echo, suffix and best_of are refused.
 */
export const completionRequestSchema = z.strictObject({
    ...commonRequestFields,
    prompt: z.union([
        z.string(),
        z.array(z.string()).length(1, {error: "one prompt per request is supported"}),
        tokenIds,
        z.array(tokenIds).length(1, {error: "one prompt per request is supported"})
    ]),
    logprobs: z.null({error: notSupported}).optional(),
    echo: z.literal(false, {error: notSupported}).nullish(),
    suffix: z.null({error: notSupported}).optional(),
    best_of: z.literal(1, {error: notSupported}).nullish()
});

export type CompletionRequest = z.infer<typeof completionRequestSchema>;
