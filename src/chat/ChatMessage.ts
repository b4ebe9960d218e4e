/** A function call an assistant turn made, as OpenAI writes it: `arguments` is a JSON text. */
export interface ChatToolCall {
    readonly id: string;
    readonly type: "function";
    readonly function: {readonly name: string; readonly arguments: string};
}

/**
 * One chat turn, as OpenAI-compatible endpoints take it: an assistant turn may call tools
 * (`tool_calls`, content then often ""), and a `tool` turn carries a call's result (`tool_call_id`).
 */
export interface ChatMessage {
    readonly role: "system" | "user" | "assistant" | "tool";
    readonly content: string;
    readonly tool_calls?: readonly ChatToolCall[];
    readonly tool_call_id?: string;
}

/** A function a chat item offers the model (OpenAI's `tools` entry); `parameters` is a JSON Schema. */
export interface ChatTool {
    readonly type: "function";
    readonly function: {readonly name: string; readonly description?: string; readonly parameters?: Readonly<Record<string, unknown>>};
}
