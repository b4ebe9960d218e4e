import type {ChatMessage} from "./ChatMessage.js";
import {InvalidInputError} from "../errors.js";

/**
 * Plain-text rendering of chat messages for models without a chat template (the embedded engine
 * takes raw text): "System: …", "User: …", "Assistant: …" lines, ending with "Assistant:" so the
 * model continues as the assistant. Both arms of an audit use the same rendering, so it never
 * biases a paired comparison; it does make embedded and HTTP chat outputs incomparable. Tool calls
 * and tool results have no plain form: a conversation with them needs the model's chat template.
 */
export function renderMessagesAsText(messages: readonly ChatMessage[]): string {
    const names = {system: "System", user: "User", assistant: "Assistant"} as const;
    return `${messages
        .map((message, index) => {
            if (message.role === "tool" || (message.tool_calls?.length ?? 0) > 0)
                throw new InvalidInputError(
                    `the plain chat format (the model has no chat template) cannot render ${message.role === "tool" ? "tool results" : "tool calls"}`,
                    `messages[${index}]`
                );
            return `${names[message.role]}: ${message.content}`;
        })
        .join("\n")}\nAssistant:`;
}
