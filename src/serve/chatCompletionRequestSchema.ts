import {z} from "zod";
import {commonRequestFields, notSupported} from "./commonRequestFields.js";

const textPart = z.strictObject({type: z.literal("text"), text: z.string()});

/** One chat message; content is text or a list of text parts (images, audio and tools are refused). */
export const chatMessageSchema = z.strictObject({
    role: z.enum(["system", "developer", "user", "assistant"]),
    content: z.union([z.string(), z.array(textPart).max(1000)]),
    name: z.string().max(256).optional()
});

/** Body of POST /v1/chat/completions. */
export const chatCompletionRequestSchema = z.strictObject({
    ...commonRequestFields,
    messages: z.array(chatMessageSchema).min(1).max(10_000),
    max_completion_tokens: z.int().min(1).max(1_000_000).nullish(),
    logprobs: z.literal(false, {error: notSupported}).nullish(),
    top_logprobs: z.null({error: notSupported}).optional(),
    response_format: z.strictObject({type: z.literal("text", {error: notSupported})}).nullish(),
    tools: z.array(z.unknown()).max(0, {error: notSupported}).nullish(),
    tool_choice: z.literal("none", {error: notSupported}).nullish(),
    parallel_tool_calls: z.boolean().nullish()
});

export type ChatCompletionRequest = z.infer<typeof chatCompletionRequestSchema>;
export type ChatMessageInput = z.infer<typeof chatMessageSchema>;
