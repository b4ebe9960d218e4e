import type {ChatMessage, ChatTool} from "../chat/ChatMessage.js";

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
