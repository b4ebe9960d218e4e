import {describe, expect, it} from "vitest";
import type {BatteryItem} from "../batteries/BatteryItem.js";
import {renderMessagesAsText} from "../chat/renderMessagesAsText.js";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import type {ChatMessageInput, ChatToolInput} from "../chat/chatMessages.js";
import type {ChatTemplate} from "../chat/ChatTemplate.js";
import {PromptExceedsContextError} from "../errors.js";
import {batteryPromptTokens, batteryWithinContext} from "./batteryPromptTokens.js";

const target = BigramBackend.random(1, 28, {contextSize: 64});
const chat: BatteryItem = {
    id: "chat",
    task: "tool",
    scorer: "json",
    messages: [
        {role: "system", content: "be brief"},
        {role: "user", content: "weather?"}
    ],
    tools: [{type: "function", function: {name: "get_weather", parameters: {type: "object"}}}]
};
const plain: BatteryItem = {id: "plain", task: "qa", scorer: "exact-match", prompt: "abc", reference: "d"};

/** A template that records what it was given and renders a fixed number of tokens per message. */
function recordingTemplate(
    tokensPerMessage: number
): ChatTemplate & {seen: Array<{messages: readonly ChatMessageInput[]; tools?: readonly ChatToolInput[] | null}>} {
    const seen: Array<{messages: readonly ChatMessageInput[]; tools?: readonly ChatToolInput[] | null}> = [];
    return {
        name: "gguf",
        seen,
        render: (messages, tools) => {
            seen.push({messages, tools});
            return Array.from({length: tokensPerMessage * messages.length}, (_value, index) => index % 20);
        }
    };
}

describe("batteryPromptTokens", () => {
    it("renders chat items with the target's chat template (messages and tools in the request shape), other items as text", () => {
        const template = recordingTemplate(3);
        expect(batteryPromptTokens(target, undefined, chat, 8, template)).toEqual([0, 1, 2, 3, 4, 5]);
        expect(template.seen).toEqual([
            {
                messages: [
                    {role: "system", content: "be brief"},
                    {role: "user", content: "weather?"}
                ],
                tools: [{type: "function", function: {name: "get_weather", parameters: {type: "object"}}}]
            }
        ]);
        expect(batteryPromptTokens(target, undefined, plain, 8, template)).toEqual(target.tokenize("abc"));
        // Without a template (the GGUF has none): the plain text format.
        expect(batteryPromptTokens(target, undefined, {...chat, tools: undefined}, 8)).toEqual(
            target.tokenize(renderMessagesAsText(chat.messages!))
        );
    });

    it("never cuts a prompt: one that does not fit with --max-tokens is refused, and skipped and counted by batteryWithinContext", () => {
        // 2 messages × 29 tokens = 58, BOS (token 0) first: 58 + 8 > 64 while 58 + 6 fits.
        const template = recordingTemplate(29);
        expect(() => batteryPromptTokens(target, undefined, chat, 8, template)).toThrow(PromptExceedsContextError);
        expect(() => batteryPromptTokens(target, undefined, chat, 8, template)).toThrow(/chat: has 58 tokens; with 8 generated tokens/);
        expect(batteryPromptTokens(target, undefined, chat, 6, template)).toHaveLength(58);
        const {kept, skips} = batteryWithinContext(target, undefined, [chat, plain], 8, template);
        expect(kept.map((item) => item.id)).toEqual(["plain"]);
        expect(skips).toEqual({ids: ["chat"], total: 2, contextSize: 64, maxTokens: 8});
        expect(batteryWithinContext(target, undefined, [chat, plain], 6, template).skips.ids).toEqual([]);
    });
});
