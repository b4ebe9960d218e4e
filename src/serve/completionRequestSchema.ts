import {z} from "zod";
import {commonRequestFields, notSupported} from "./commonRequestFields.js";

/**
 * Body of POST /v1/completions for a model of `contextSize` tokens. `prompt` is text or token ids,
 * one prompt per request (a list of one is accepted, as OpenAI clients send it); echo,
 * suffix and best_of are refused. A prompt of ids longer than the context is refused by its length
 * alone, before any id is looked at (a 1 MB id list then costs well under a millisecond).
 */
export function completionRequestSchema(contextSize: number) {
    const tooLong = `holds more token ids than this model's context of ${contextSize} tokens`;
    const tokenIds = z
        .array(
            z
                .int()
                .min(0)
                .max(2 ** 31 - 1)
        )
        .min(1);
    const prompt = z.union([
        z.string(),
        z.array(z.string()).length(1, {error: "one prompt per request is supported"}),
        tokenIds,
        z.array(tokenIds).length(1, {error: "one prompt per request is supported"})
    ]);
    // The one length check, before the union looks at any element.
    const withinContext = (value: unknown): boolean =>
        !Array.isArray(value) ||
        (value.length <= contextSize && (value.length !== 1 || !Array.isArray(value[0]) || value[0].length <= contextSize));
    return z.strictObject({
        ...commonRequestFields,
        prompt: z.unknown().refine(withinContext, {error: tooLong, abort: true}).pipe(prompt),
        /** The sampled token's log-probability and this many alternatives per position (OpenAI: at most 5). */
        logprobs: z.int().min(0).max(5).nullish(),
        echo: z.literal(false, {error: notSupported}).nullish(),
        suffix: z.null({error: notSupported}).optional(),
        best_of: z.literal(1, {error: notSupported}).nullish()
    });
}

export type CompletionRequest = z.infer<ReturnType<typeof completionRequestSchema>>;
