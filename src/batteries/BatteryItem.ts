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

/** A labelled answer option of a multiple-choice item. */
export interface BatteryChoice {
    readonly label: string;
    readonly text: string;
}

/** Which scorer turns an output into a pass/fail for the item; "none" means only byte identity is compared. */
export type ScorerKind = "refusal" | "multiple-choice" | "bbq" | "numeric" | "exact-match" | "json" | "none";

/**
 * One prompt of a battery, whatever dataset it came from. Exactly one of `prompt` and `messages` is
 * set. `reference` is what a correct output contains (a choice label, a number, a string); for a
 * refusal task there is none, because the pass condition is refusing.
 */
export interface BatteryItem {
    /** Unique within the battery, stable across runs (ledgers and reports key on it). */
    readonly id: string;
    readonly task: string;
    readonly language?: string;
    readonly prompt?: string;
    readonly messages?: readonly ChatMessage[];
    /** Functions the model may call (chat items only); rendered by the model's chat template. */
    readonly tools?: readonly ChatTool[];
    readonly reference?: string;
    readonly choices?: readonly BatteryChoice[];
    readonly scorer: ScorerKind;
    /** Dataset-specific facts a scorer needs (for BBQ: which choice means "unknown"). */
    readonly metadata?: Readonly<Record<string, string>>;
}
