import {z} from "zod";
import {chatMessageSchema, chatToolSchema} from "../chat/chatMessages.js";
import {commonRequestFields, notSupported} from "./commonRequestFields.js";

/** Body of POST /v1/chat/completions. */
export const chatCompletionRequestSchema = z.strictObject({
    ...commonRequestFields,
    messages: z.array(chatMessageSchema).min(1).max(10_000),
    max_completion_tokens: z.int().min(1).max(1_000_000).nullish(),
    logprobs: z.boolean().nullish(),
    /** Most likely alternatives per token (OpenAI: 0–20); needs logprobs: true. */
    top_logprobs: z.int().min(0).max(20).nullish(),
    tools: z.array(chatToolSchema).max(1000).nullish(),
    // "auto" and "none" only: forcing a call ("required", a named function) needs constrained decoding.
    tool_choice: z.enum(["none", "auto"], {error: `${notSupported} (only "auto" and "none")`}).nullish(),
    parallel_tool_calls: z.boolean().nullish()
});

export type ChatCompletionRequest = z.infer<typeof chatCompletionRequestSchema>;
