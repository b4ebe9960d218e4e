import type {ModelBackend} from "../backend/ModelBackend.js";
import {renderMessagesAsText} from "../decodePaths/renderMessagesAsText.js";
import type {ChatMessageInput} from "./chatCompletionRequestSchema.js";

/** Turns chat messages into the prompt's token ids (BOS optional: the engine adds it when missing). */
export interface ChatTemplate {
    /** "default" or "gguf" (the model's own template), reported by /v1/models. */
    readonly name: string;
    render(messages: readonly ChatMessageInput[]): number[];
}

/** The text of a message: a string, or its text parts joined without separator (as OpenAI does). */
export function messageText(message: ChatMessageInput): string {
    return typeof message.content === "string" ? message.content : message.content.map((part) => part.text).join("");
}

/**
 * The documented default for models without a chat template: the same plain rendering as the
 * embedded decode path ("System: …", "User: …", "Assistant: …" lines, then "Assistant:"), so an
 * audit comparing the embedded engine with this server sees identical prompts. `developer`
 * messages render as system messages.
 */
export function defaultChatTemplate(target: ModelBackend): ChatTemplate {
    return {
        name: "default",
        render(messages) {
            const turns = messages.map((message) => ({
                role: message.role === "developer" ? "system" as const : message.role,
                content: messageText(message)
            }));
            return target.tokenize(renderMessagesAsText(turns));
        }
    };
}
