import type {ModelBackend} from "../backend/ModelBackend.js";
import type {BatteryItem} from "../batteries/BatteryItem.js";
import {renderBatteryChat} from "../batteries/renderBatteryChat.js";
import {renderMessagesAsText} from "../chat/renderMessagesAsText.js";
import type {ChatTemplate} from "../chat/ChatTemplate.js";
import {addsBos} from "../backend/addsBos.js";
import {type ContextSkips, contextRefusal, fitsContext} from "../engine/fitsContext.js";

/**
 * An item's whole prompt: its text tokenized by the target, or its conversation rendered by
 * `chatTemplate` (the target GGUF's, as serve renders chat) or, without one, in the plain text format.
 */
function itemTokens(target: ModelBackend, item: BatteryItem, chatTemplate: ChatTemplate | undefined): number[] {
    if (item.prompt === undefined && item.messages !== undefined && chatTemplate !== undefined)
        return renderBatteryChat(chatTemplate, item.messages, item.tools);
    return target.tokenize(item.prompt ?? renderMessagesAsText(item.messages ?? []));
}

/** The tokens an item's prompt takes in the context: itemTokens, and BOS where generate adds it. */
function promptLength(target: ModelBackend, tokens: readonly number[]): number {
    return tokens.length + (addsBos(target) && tokens[0] !== target.bosToken ? 1 : 0);
}

/**
 * An item's prompt as the tune commands feed it to the engine (see itemTokens). A prompt that does not
 * fit the context with maxTokens generated tokens (fitsContext) is a PromptExceedsContextError;
 * commands skip those items first (batteryWithinContext), and nothing is cut.
 */
export function batteryPromptTokens(
    target: ModelBackend,
    draft: ModelBackend | undefined,
    item: BatteryItem,
    maxTokens: number,
    chatTemplate?: ChatTemplate
): number[] {
    const contextSize = Math.min(target.contextSize, draft?.contextSize ?? Infinity);
    const promptTokens = itemTokens(target, item, chatTemplate);
    const length = promptLength(target, promptTokens);
    if (!fitsContext(length, maxTokens, contextSize)) throw contextRefusal(length, maxTokens, contextSize, item.id);
    return promptTokens;
}

/**
 * The items whose prompts fit the context with maxTokens generated tokens, and the context rule's
 * count of those skipped (src/cli/contextSkips.ts).
 */
export function batteryWithinContext(
    target: ModelBackend,
    draft: ModelBackend | undefined,
    items: readonly BatteryItem[],
    maxTokens: number,
    chatTemplate?: ChatTemplate
): {kept: BatteryItem[]; skips: ContextSkips} {
    const contextSize = Math.min(target.contextSize, draft?.contextSize ?? Infinity);
    const kept: BatteryItem[] = [];
    const ids: string[] = [];
    for (const item of items) {
        if (fitsContext(promptLength(target, itemTokens(target, item, chatTemplate)), maxTokens, contextSize)) kept.push(item);
        else ids.push(item.id);
    }
    return {kept, skips: {ids, total: items.length, contextSize, maxTokens}};
}
