import {z} from "zod";

/**
 * Chat messages and tools as OpenAI's chat API writes them: what chat templates render, whether
 * the messages come from an HTTP request (serve) or a battery (sweep, calibrate, audits).
 */
const textPart = z.strictObject({type: z.literal("text"), text: z.string()});
const textContent = z.union([z.string(), z.array(textPart).max(1000)]);

/** One function call the assistant made, as OpenAI writes it: `arguments` is a JSON text. */
export const chatToolCallSchema = z.strictObject({
    id: z.string().max(256),
    type: z.literal("function"),
    function: z.strictObject({name: z.string().min(1).max(256), arguments: z.string()})
});

/** One message; content is text or a list of text parts (images and audio are refused). */
export const chatMessageSchema = z.discriminatedUnion("role", [
    z.strictObject({role: z.enum(["system", "developer", "user"]), content: textContent, name: z.string().max(256).optional()}),
    z
        .strictObject({
            role: z.literal("assistant"),
            content: textContent.nullish(),
            name: z.string().max(256).optional(),
            tool_calls: z.array(chatToolCallSchema).max(1000).optional(),
            refusal: z.string().nullish()
        })
        .refine((message) => message.content != null || (message.tool_calls?.length ?? 0) > 0, {
            error: "an assistant message needs content or tool_calls",
            path: ["content"]
        }),
    z.strictObject({role: z.literal("tool"), content: textContent, tool_call_id: z.string().max(256)})
]);

/** A function the model may call (OpenAI's `tools` entry); `parameters` is a JSON Schema object. */
export const chatToolSchema = z.strictObject({
    type: z.literal("function"),
    function: z.strictObject({
        name: z.string().min(1).max(256),
        description: z.string().optional(),
        parameters: z.record(z.string(), z.unknown()).optional(),
        strict: z.boolean().nullish()
    })
});

export type ChatMessageInput = z.infer<typeof chatMessageSchema>;
export type ChatToolInput = z.infer<typeof chatToolSchema>;
