import type {ChatMessage} from "../batteries/BatteryItem.js";

/**
 * Plain-text rendering of chat messages for models without a chat template (the embedded engine
 * takes raw text): "System: …", "User: …", "Assistant: …" lines, ending with "Assistant:" so the
 * model continues as the assistant. Both arms of an audit use the same rendering, so it never
 * biases a paired comparison; it does make embedded and HTTP chat outputs incomparable.
 */
export function renderMessagesAsText(messages: readonly ChatMessage[]): string {
    const names = {system: "System", user: "User", assistant: "Assistant"} as const;
    return `${messages.map((message) => `${names[message.role]}: ${message.content}`).join("\n")}\nAssistant:`;
}
