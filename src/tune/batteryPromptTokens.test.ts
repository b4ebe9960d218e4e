import {describe, expect, it} from "vitest";
import type {BatteryItem} from "../batteries/BatteryItem.js";
import {renderMessagesAsText} from "../chat/renderMessagesAsText.js";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import type {ChatMessageInput, ChatToolInput} from "../chat/chatMessages.js";
import type {ChatTemplate} from "../chat/ChatTemplate.js";
import {batteryPromptTokens, cutPromptsLine} from "./batteryPromptTokens.js";

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

    it("cuts a rendered conversation longer than the context from the left, and names it", () => {
        const template = recordingTemplate(40);
        const tokens = batteryPromptTokens(target, undefined, chat, 8, template);
        expect(tokens).toHaveLength(64 - 8 - 2);
        expect(tokens.at(-1)).toBe(79 % 20);
        expect(cutPromptsLine("specgate sweep", target, undefined, [chat, plain], 8, template)).toMatch(
            /^specgate sweep: 1 of 2 item\(s\) .*: chat\n$/
        );
        expect(cutPromptsLine("specgate sweep", target, undefined, [chat, plain], 8, recordingTemplate(3))).toBe("");
    });
});
