import {z} from "zod";
import {speculativeFieldSchema} from "./speculativeFieldSchema.js";

export const notSupported = "is not supported by this server";

/** Stop sequences a request may give (OpenAI allows 4; llama-server and vLLM take more). */
export const maxStopSequences = 16;
const stopSequence = z
    .string()
    .min(1, {error: "a stop sequence must not be empty"})
    .max(1000, {error: "a stop sequence is at most 1000 characters"});

/**
 * Fields shared by /v1/completions and /v1/chat/completions, with OpenAI's names. Parameters the
 * engine cannot honour are accepted only at their neutral value (n = 1, no penalties, no logit
 * bias), so a client asking for more gets a 400 naming the field instead of a silent difference.
 */
export const commonRequestFields = {
    model: z.string().min(1).max(256).nullish(),
    stream: z.boolean().nullish(),
    stream_options: z.strictObject({include_usage: z.boolean().nullish(), continuous_usage_stats: z.boolean().nullish()}).nullish(),
    max_tokens: z.int().min(1).max(1_000_000).nullish(),
    temperature: z.number().min(0).max(100).nullish(),
    top_p: z.number().gt(0).max(1).nullish(),
    /** vLLM's convention: -1 (or 0) disables top-k. */
    top_k: z.int().min(-1).max(1_000_000).nullish(),
    min_p: z.number().min(0).max(1).nullish(),
    stop: z
        .union([stopSequence, z.array(stopSequence).max(maxStopSequences, {error: `at most ${maxStopSequences} stop sequences`})])
        .nullish(),
    seed: z.int().min(0).max(Number.MAX_SAFE_INTEGER).nullish(),
    /** vLLM's and llama-server's extension: keep generating past the end-of-generation token, to max_tokens (benchmarks). */
    ignore_eos: z.boolean().nullish(),
    n: z.literal(1, {error: `only n = 1 is supported`}).nullish(),
    presence_penalty: z.literal(0, {error: notSupported}).nullish(),
    frequency_penalty: z.literal(0, {error: notSupported}).nullish(),
    logit_bias: z
        .record(z.string(), z.number())
        .refine((value) => Object.keys(value).length === 0, {error: notSupported})
        .nullish(),
    user: z.string().max(256).nullish(),
    /**
     * OpenAI's structured outputs: {type: "text"}, {type: "json_object"} or {type: "json_schema",
     * json_schema: {name, schema, strict}}; the rest is checked by grammarForResponseFormat.
     */
    response_format: z.looseObject({type: z.enum(["text", "json_object", "json_schema"])}).nullish(),
    /** llama-server's: reuse the KV of a cached sequence sharing a prefix with this prompt (default true). */
    cache_prompt: z.boolean().nullish(),
    speculative: speculativeFieldSchema.nullish()
};
