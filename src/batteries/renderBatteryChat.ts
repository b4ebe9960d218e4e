import type {ChatMessageInput, ChatToolInput} from "../chat/chatMessages.js";
import type {ChatTemplate} from "../chat/ChatTemplate.js";
import type {ChatMessage, ChatTool} from "../chat/ChatMessage.js";

/**
 * A battery conversation's prompt tokens as `specgate serve` renders the same conversation sent by
 * an OpenAI client: its messages and tools in the request's shape, through the server's chat template.
 */
export function renderBatteryChat(template: ChatTemplate, messages: readonly ChatMessage[], tools?: readonly ChatTool[]): number[] {
    return template.render(messages.map(chatMessageInput), tools?.map(chatToolInput));
}

function chatMessageInput(message: ChatMessage): ChatMessageInput {
    if (message.role === "tool") return {role: "tool", content: message.content, tool_call_id: message.tool_call_id ?? ""};
    if (message.role === "assistant") {
        const calls = message.tool_calls?.map((call) => ({
            id: call.id,
            type: "function" as const,
            function: {name: call.function.name, arguments: call.function.arguments}
        }));
        return {role: "assistant", content: message.content, ...(calls !== undefined ? {tool_calls: calls} : {})};
    }
    return {role: message.role, content: message.content};
}

function chatToolInput(tool: ChatTool): ChatToolInput {
    const {name, description, parameters} = tool.function;
    return {
        type: "function",
        function: {
            name,
            ...(description !== undefined ? {description} : {}),
            ...(parameters !== undefined ? {parameters: {...parameters}} : {})
        }
    };
}
