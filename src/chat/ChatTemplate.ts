import type {ModelBackend} from "../backend/ModelBackend.js";
import {renderMessagesAsText} from "./renderMessagesAsText.js";
import {InvalidInputError} from "../errors.js";
import type {ChatMessageInput, ChatToolInput} from "./chatMessages.js";
import type {ToolCallSyntax} from "./toolCalls.js";

/** Turns chat messages (and the tools the model may call) into the prompt's token ids (BOS optional: the engine adds it when missing). */
export interface ChatTemplate {
    /** "default" or "gguf" (the model's own template), reported by /v1/models. */
    readonly name: string;
    render(messages: readonly ChatMessageInput[], tools?: readonly ChatToolInput[] | null): number[];
    /** How the template's model writes tool calls, when known: replies to requests with tools are parsed by it. */
    readonly toolCalls?: ToolCallSyntax;
}

/** The text of a message: a string, or its text parts joined without separator (as OpenAI does); none for an assistant turn that only calls tools. */
export function messageText(message: ChatMessageInput): string {
    const content = message.content;
    if (content == null) return "";
    return typeof content === "string" ? content : content.map((part) => part.text).join("");
}

/**
 * Every piece of client text a chat request puts into the prompt: message texts, tool-call
 * arguments and the tool definitions (as JSON), for the byte limit checked before tokenizing.
 */
export function chatRequestTexts(request: {messages: readonly ChatMessageInput[]; tools?: readonly ChatToolInput[] | null}): string[] {
    const texts: string[] = [];
    for (const message of request.messages) {
        texts.push(messageText(message));
        if (message.role === "assistant")
            for (const call of message.tool_calls ?? []) texts.push(call.function.name, call.function.arguments);
    }
    for (const tool of request.tools ?? []) texts.push(JSON.stringify(tool));
    return texts;
}

/**
 * The documented default for models without a chat template: the same plain rendering as the
 * embedded decode path ("System: …", "User: …", "Assistant: …" lines, then "Assistant:"), so an
 * audit comparing the embedded engine with this server sees identical prompts. `developer`
 * messages render as system messages. This format has no way to show tools, tool calls or tool
 * results, so a request carrying them is refused (400) instead of silently losing them.
 */
export function defaultChatTemplate(target: ModelBackend): ChatTemplate {
    return {
        name: "default",
        render(messages, tools) {
            if ((tools?.length ?? 0) > 0)
                throw new InvalidInputError(
                    "the plain chat format (this model has no chat template) cannot render tools; serve a GGUF whose template handles them",
                    "tools"
                );
            const turns = messages.map((message, index) => {
                if (message.role === "tool" || (message.role === "assistant" && (message.tool_calls?.length ?? 0) > 0))
                    throw new InvalidInputError(
                        `the plain chat format (this model has no chat template) cannot render ${message.role === "tool" ? "tool results" : "tool calls"}`,
                        `messages[${index}]`
                    );
                return {role: message.role === "developer" ? ("system" as const) : message.role, content: messageText(message)};
            });
            return target.tokenize(renderMessagesAsText(turns));
        }
    };
}
