import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import OpenAI from "openai";
import type {ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageParam, ChatCompletionTool} from "openai/resources";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {loadModelBackend} from "../backend/loadModelBackend.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {extractToolCalls} from "../audits/canary/extractToolCalls.js";
import type {ChatMessage, ChatTool} from "../chat/ChatMessage.js";
import {EmbeddedDecodePath} from "../decodePaths/EmbeddedDecodePath.js";
import {OpenAiDecodePath} from "../decodePaths/OpenAiDecodePath.js";
import {oneHot, RowBackend} from "../engine/drafters/testing/RowBackend.js";
import {generate} from "../engine/generate.js";
import {GgufReader} from "../gguf/GgufReader.js";
import {hfBpeVocabulary} from "../gguf/hfBpeVocabulary.js";
import {writeRandomLlamaPair} from "../gguf/randomLlamaModel.js";
import {readFamilyTokenizerFiles, tokenizerFamilies} from "../gguf/tokenizerFamilies.js";
import type {ChatMessageInput, ChatToolInput} from "../chat/chatMessages.js";
import {ggufChatTemplate, type GgufChatTemplate} from "../chat/ggufChatTemplate.js";
import {startServeServer} from "./startServeServer.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/**
 * Serving chat on the qwen3 fixture through the official openai client: Qwen's real vocabulary and
 * ChatML template from the GGUF, a target padded 128 tokens beyond its draft (as Qwen2.5 7B over
 * 0.5B), strict speculative decoding. The prompt is the GGUF template's rendering, tokenized with
 * its special tokens and no BOS (Qwen's add_bos_token is false). Tools, tool calls and tool results
 * reach the template (Qwen's renders them as <tools>, <tool_call> and <tool_response> blocks).
 */
let directory: string;
let target: ModelBackend;
let draft: ModelBackend;
let template: GgufChatTemplate;

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-serve-qwen3-"));
    const vocabulary = hfBpeVocabulary(await readFamilyTokenizerFiles("qwen3"), tokenizerFamilies.qwen3.options);
    const pair = await writeRandomLlamaPair({
        directory,
        seed: 5,
        vocabulary,
        targetPaddingTokens: 128,
        target: {embeddingLength: 32, blockCount: 1, headCount: 2, headCountKv: 2, feedForwardLength: 64, contextLength: 1024},
        draft: {embeddingLength: 16, blockCount: 1, headCount: 1, headCountKv: 1, feedForwardLength: 32, contextLength: 1024}
    });
    target = await loadModelBackend(pair.targetPath, {threads: 1, contextSize: 1024});
    draft = await loadModelBackend(pair.draftPath, {threads: 1, contextSize: 1024});
    const source = GgufReader.readHeader(pair.targetPath).metadata.get("tokenizer.chat_template")!.value as string;
    const tokens = target.vocabularyDescription!().tokens;
    template = ggufChatTemplate(target, source, {bos: tokens[target.bosToken!], eos: tokens[target.eosToken!]});
}, 120_000);

afterAll(async () => {
    await draft?.dispose();
    await target?.dispose();
    await rm(directory, {recursive: true, force: true});
});

/** Target-only decoding and a stream of the same request give `content`, the speculative reply's text. */
async function expectSameTargetOnlyAndStreamed(
    openai: OpenAI,
    request: ChatCompletionCreateParamsNonStreaming,
    content: string
): Promise<void> {
    const targetOnly = await openai.chat.completions.create({...request, speculative: "off"} as ChatCompletionCreateParamsNonStreaming);
    expect(targetOnly.choices[0].message.content).toBe(content);
    const stream = await openai.chat.completions.create({...request, stream: true});
    let streamed = "";
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta?.content ?? "";
    expect(streamed).toBe(content);
}

describe("serve chat on the qwen3 fixture", () => {
    it("loads a pair 128 tokens apart", () => {
        expect(target.vocabularySize - draft.vocabularySize).toBe(128);
    });

    it("a string prompt gets no BOS: Qwen's GGUF says add_bos_token = false", async () => {
        const result = await generate(target, undefined, "東京は", {maxTokens: 1, sampling: {temperature: 0}});
        expect(result.promptTokens).toBe(target.tokenize("東京は").length);
    });

    it("answers system + multi-turn chat through the openai client, streamed and not, strict equal to target-only", async () => {
        const server = await startServeServer({
            target,
            draft,
            chatTemplate: template,
            modelName: "qwen3-fixture",
            speculative: {policy: {kind: "strict"}, gamma: 4},
            port: 0
        });
        try {
            const openai = new OpenAI({baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0});
            const messages: ChatCompletionMessageParam[] = [
                {role: "system", content: "You answer in one line."},
                {role: "user", content: "Where is 東京? 😀"},
                {role: "assistant", content: "In Japan — 日本."},
                {role: "user", content: "और दिल्ली?"}
            ];
            const request = {model: "qwen3-fixture", messages, max_tokens: 16, temperature: 0, seed: 1};
            const answer = await openai.chat.completions.create(request);
            expect(answer.usage?.prompt_tokens).toBe(template.render(messages as ChatMessageInput[]).length);
            expect(answer.usage?.completion_tokens).toBeGreaterThan(0);
            await expectSameTargetOnlyAndStreamed(openai, request, answer.choices[0].message.content ?? "");
        } finally {
            await server.close();
        }
    }, 120_000);

    it("renders tools, the assistant's tool calls and the tool results through the openai client; unsupported tool_choice is a 400", async () => {
        const server = await startServeServer({
            target,
            draft,
            chatTemplate: template,
            modelName: "qwen3-fixture",
            speculative: {policy: {kind: "strict"}, gamma: 4},
            port: 0
        });
        try {
            const openai = new OpenAI({baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0});
            const tools: ChatCompletionTool[] = [
                {
                    type: "function",
                    function: {
                        name: "get_weather",
                        description: "Current weather — 天気",
                        parameters: {type: "object", properties: {city: {type: "string"}, days: {type: "integer"}}, required: ["city"]}
                    }
                }
            ];
            const messages: ChatCompletionMessageParam[] = [
                {role: "system", content: "Use tools when needed."},
                {role: "user", content: "Weather in 東京 and दिल्ली? 😀"},
                {
                    role: "assistant",
                    content: null,
                    tool_calls: [
                        {id: "call_1", type: "function", function: {name: "get_weather", arguments: '{"city":"東京","days":2}'}},
                        {id: "call_2", type: "function", function: {name: "get_weather", arguments: '{"city":"दिल्ली"}'}}
                    ]
                },
                {role: "tool", tool_call_id: "call_1", content: "晴れ, 21°C"},
                {role: "tool", tool_call_id: "call_2", content: "धूप, 35°C"}
            ];
            const text = template.renderText(messages as ChatMessageInput[], tools as ChatToolInput[]);
            expect(text).toContain('<tool_call>\n{"name": "get_weather", "arguments": {"city": "東京", "days": 2}}\n</tool_call>');
            expect(text).toContain(
                "<|im_start|>user\n<tool_response>\n晴れ, 21°C\n</tool_response>\n<tool_response>\nधूप, 35°C\n</tool_response><|im_end|>\n"
            );
            expect(text).toContain('"description": "Current weather — 天気"');

            const request = {model: "qwen3-fixture", messages, tools, max_tokens: 12, temperature: 0, seed: 1};
            const answer = await openai.chat.completions.create(request);
            expect(answer.usage?.prompt_tokens).toBe(template.render(messages as ChatMessageInput[], tools as ChatToolInput[]).length);
            // Without the tools the prompt is shorter: they were rendered, not dropped.
            expect(answer.usage!.prompt_tokens).toBeGreaterThan(template.render(messages as ChatMessageInput[]).length);
            await expectSameTargetOnlyAndStreamed(openai, request, answer.choices[0].message.content ?? "");

            await expect(openai.chat.completions.create({...request, tool_choice: "required"})).rejects.toMatchObject({
                status: 400,
                message: expect.stringMatching(/tool_choice/)
            });
            const badArguments: ChatCompletionMessageParam[] = [
                {role: "user", content: "x"},
                {
                    role: "assistant",
                    content: null,
                    tool_calls: [{id: "c", type: "function", function: {name: "get_weather", arguments: "{city: 東京"}}]
                }
            ];
            await expect(openai.chat.completions.create({...request, messages: badArguments})).rejects.toMatchObject({
                status: 400,
                message: expect.stringMatching(/messages\[1\]\.tool_calls\[0\]\.function\.arguments: is not JSON/)
            });
        } finally {
            await server.close();
        }
    }, 120_000);

    it("parses the model's <tool_call> blocks into tool_calls, whole and streamed, through the openai client", async () => {
        const tools: ChatCompletionTool[] = [
            {type: "function", function: {name: "get_weather", parameters: {type: "object", properties: {city: {type: "string"}}}}}
        ];
        const messages: ChatCompletionMessageParam[] = [{role: "user", content: "Weather in 東京 and Zürich?"}];
        const reply =
            'I\'ll check both.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "東京"}}\n</tool_call>\n' +
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich", "days": 2}}\n</tool_call>';
        const script = target.tokenize(reply);
        expect(target.detokenize(script)).toBe(reply);
        // A target that writes `reply` after the prompt (the end of the rendering marks where the reply starts), then EOS.
        const marker = template.render(messages as ChatMessageInput[], tools as ChatToolInput[]).slice(-3);
        const scripted = new RowBackend(target, (tokens) => {
            let start = tokens.length;
            while (start >= marker.length && !marker.every((token, index) => tokens[start - marker.length + index] === token)) start--;
            const written = tokens.slice(start);
            const next =
                written.length < script.length && written.every((token, index) => token === script[index])
                    ? script[written.length]!
                    : target.eosToken!;
            return oneHot(target.vocabularySize, next);
        });
        const server = await startServeServer({target: scripted, chatTemplate: template, modelName: "qwen3-fixture", port: 0});
        try {
            const openai = new OpenAI({baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0});
            const request = {model: "qwen3-fixture", messages, tools, max_tokens: 120, temperature: 0};
            const calls = [
                {type: "function", function: {name: "get_weather", arguments: '{"city":"東京"}'}},
                {type: "function", function: {name: "get_weather", arguments: '{"city":"Zürich","days":2}'}}
            ];
            const whole = await openai.chat.completions.create(request);
            expect(whole.choices[0].finish_reason).toBe("tool_calls");
            expect(whole.choices[0].message.content).toBe("I'll check both.");
            expect(whole.choices[0].message.tool_calls).toEqual(calls.map((call) => ({id: expect.stringMatching(/^call_/), ...call})));

            const stream = await openai.chat.completions.create({...request, stream: true});
            let content = "";
            const streamedCalls: unknown[] = [];
            let finishReason: string | null = null;
            for await (const chunk of stream) {
                content += chunk.choices[0]?.delta?.content ?? "";
                streamedCalls.push(...(chunk.choices[0]?.delta?.tool_calls ?? []));
                finishReason = chunk.choices[0]?.finish_reason ?? finishReason;
            }
            expect(content).toBe("I'll check both.");
            expect(streamedCalls).toEqual(calls.map((call, index) => ({index, id: expect.stringMatching(/^call_/), ...call})));
            expect(finishReason).toBe("tool_calls");

            // tool_choice "none", or no tools: the reply is text.
            const none = await openai.chat.completions.create({...request, tool_choice: "none"});
            expect(none.choices[0]).toMatchObject({finish_reason: "stop", message: {content: reply}});
            expect(none.choices[0].message.tool_calls).toBeUndefined();

            // Audits see the same reply from this server and from the embedded engine on the same model.
            const auditRequest = {messages: messages as ChatMessage[], tools: tools as ChatTool[], maxTokens: 120, temperature: 0};
            const served = await new OpenAiDecodePath("served", {
                baseUrl: `${server.url}/v1`,
                model: "qwen3-fixture",
                endpoint: "chat"
            }).complete(auditRequest);
            const embedded = await new EmbeddedDecodePath("embedded", scripted, undefined, {}, {}, false, template).complete(auditRequest);
            expect(embedded).toMatchObject({text: served.text, finishReason: "tool_calls"});
            expect(served.finishReason).toBe("tool_calls");
            expect(extractToolCalls(served.text)).toEqual([
                {name: "get_weather", arguments: {city: "東京"}},
                {name: "get_weather", arguments: {city: "Zürich", days: 2}}
            ]);
        } finally {
            await server.close();
        }
    }, 120_000);
});
