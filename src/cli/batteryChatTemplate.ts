import type {ModelBackend} from "../backend/ModelBackend.js";
import type {BatteryItem} from "../batteries/BatteryItem.js";
import type {ChatTemplate} from "../chat/ChatTemplate.js";
import {ggufFileChatTemplate} from "../chat/ggufChatTemplate.js";

/**
 * How a command renders a battery's chat items: the target GGUF's own template, as `specgate serve`
 * (`--chat-template auto`) and embedded decode paths render chat, so a tuned setting is measured on
 * the prompts it will serve; undefined when the battery has no chat items or the GGUF no template
 * (the plain text format then).
 */
export function batteryChatTemplate(target: ModelBackend, targetPath: string, items: readonly BatteryItem[]): ChatTemplate | undefined {
    if (!items.some((item) => item.prompt === undefined && item.messages !== undefined)) return undefined;
    return ggufFileChatTemplate(target, targetPath);
}
