import type {ModelBackend} from "../backend/ModelBackend.js";
import type {BatteryItem} from "../batteries/BatteryItem.js";
import {renderBatteryChat} from "../batteries/renderBatteryChat.js";
import {renderMessagesAsText} from "../chat/renderMessagesAsText.js";
import {InvalidInputError} from "../errors.js";
import type {ChatTemplate} from "../chat/ChatTemplate.js";

/**
 * An item's whole prompt: its text tokenized by the target, or its conversation rendered by
 * `chatTemplate` (the target GGUF's, as serve renders chat) or, without one, in the plain text format.
 */
function itemTokens(target: ModelBackend, item: BatteryItem, chatTemplate: ChatTemplate | undefined): number[] {
    if (item.prompt === undefined && item.messages !== undefined && chatTemplate !== undefined)
        return renderBatteryChat(chatTemplate, item.messages, item.tools);
    return target.tokenize(item.prompt ?? renderMessagesAsText(item.messages ?? []));
}

/**
 * An item's prompt as the tune commands feed it to the engine (see itemTokens) and, when longer
 * than the context leaves room for (BOS, every generated token and the final pending token), cut
 * from the left so the end of the question survives.
 */
export function batteryPromptTokens(
    target: ModelBackend,
    draft: ModelBackend | undefined,
    item: BatteryItem,
    maxTokens: number,
    chatTemplate?: ChatTemplate
): number[] {
    const contextSize = Math.min(target.contextSize, draft?.contextSize ?? Infinity);
    const promptBudget = contextSize - maxTokens - 2;
    if (promptBudget < 1)
        throw new InvalidInputError(`${maxTokens} leaves no room for a prompt in a ${contextSize}-token context`, "--max-tokens");
    const promptTokens = itemTokens(target, item, chatTemplate);
    return promptTokens.slice(Math.max(0, promptTokens.length - promptBudget));
}

/**
 * One stderr line naming the items whose prompts batteryPromptTokens cuts (longer than the context
 * leaves room for with `maxTokens`), or "" when none is cut: the cut is reported, never silent.
 */
export function cutPromptsLine(
    command: string,
    target: ModelBackend,
    draft: ModelBackend | undefined,
    items: readonly BatteryItem[],
    maxTokens: number,
    chatTemplate?: ChatTemplate
): string {
    const contextSize = Math.min(target.contextSize, draft?.contextSize ?? Infinity);
    const budget = contextSize - maxTokens - 2;
    const cut = items.filter((item) => itemTokens(target, item, chatTemplate).length > budget).map((item) => item.id);
    if (cut.length === 0) return "";
    return (
        `${command}: ${cut.length} of ${items.length} item(s) have prompts longer than the ${contextSize}-token context leaves room for with --max-tokens ${maxTokens}; ` +
        `they were cut from the left, keeping the end of the question: ${cut.slice(0, 10).join(", ")}${cut.length > 10 ? ", …" : ""}\n`
    );
}
