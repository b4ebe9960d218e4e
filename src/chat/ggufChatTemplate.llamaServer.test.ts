import {type ChildProcess, spawn} from "node:child_process";
import {existsSync} from "node:fs";
import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {loadModelBackend} from "../backend/loadModelBackend.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {GgufReader} from "../gguf/GgufReader.js";
import {writeRandomLlamaPair} from "../gguf/randomLlamaModel.js";
import {multilingualCorpus} from "../gguf/testing/multilingualCorpus.js";
import {familyVocabulary, type TokenizerFamily} from "../gguf/tokenizerFamilies.js";
import type {ChatMessageInput, ChatToolInput} from "./chatMessages.js";
import {ggufChatTemplate} from "./ggufChatTemplate.js";
import {freePort} from "../serve/testing/freePort.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/**
 * Template parity with llama.cpp's own template engine: for each family fixture, the prompt specgate
 * renders from the GGUF's chat template equals what llama-server's /apply-template renders for the
 * same GGUF, for 60 conversations (with and without a system turn, one to four user turns with the
 * assistant's replies between, multilingual text, user turns as a string or as text parts) and for 60 conversations with tools: tool
 * definitions, assistant turns that call one or more tools (with and without text, arguments with
 * multilingual strings, numbers, booleans, null, arrays and nested objects), the tool results, and
 * replies after them (Gemma 3's template refuses tool turns, in llama.cpp as here). llama-server is built
 * by `npm run build:baselines`; without it these tests are skipped.
 */
const llamaServer = join(import.meta.dirname, "../../native/build/baselines/bin/llama-server");
const conversations = 60;

function conversation(index: number, texts: readonly string[]): ChatMessageInput[] {
    const messages: ChatMessageInput[] = [];
    let next = index * 7;
    const text = () => texts[next++ % texts.length].trim() || "hello";
    if (index % 2 === 0) messages.push({role: "system", content: text()} as ChatMessageInput);
    const turns = 1 + (index % 4);
    for (let turn = 0; turn < turns; turn++) {
        // Every third conversation sends its user turns as text parts.
        messages.push({
            role: "user",
            content:
                index % 3 === 1
                    ? [
                          {type: "text", text: text()},
                          {type: "text", text: text()}
                      ]
                    : text()
        } as ChatMessageInput);
        if (turn < turns - 1) messages.push({role: "assistant", content: text()} as ChatMessageInput);
    }
    return messages;
}

const toolDefinitions: ChatToolInput[] = [
    {
        type: "function",
        function: {
            name: "get_weather",
            description: "Current weather for a city",
            parameters: {
                type: "object",
                properties: {
                    city: {type: "string", description: "City name, e.g. 東京"},
                    unit: {type: "string", enum: ["celsius", "fahrenheit"]}
                },
                required: ["city"]
            }
        }
    },
    {
        type: "function",
        function: {
            name: "search",
            description: "Sucht im Web — नमस्ते 😀",
            parameters: {
                type: "object",
                properties: {
                    query: {type: "string"},
                    limit: {type: "integer", minimum: 1},
                    filters: {type: "object", properties: {site: {type: "string"}, after: {type: "string", format: "date"}}}
                },
                required: ["query"]
            }
        }
    },
    {type: "function", function: {name: "no_arguments"}},
    {
        type: "function",
        function: {
            name: "set_flags",
            description: "",
            parameters: {
                type: "object",
                properties: {flags: {type: "array", items: {type: "boolean"}}, ratio: {type: "number"}, note: {type: ["string", "null"]}}
            },
            strict: true
        }
    }
];

/** A conversation with tools: definitions (or none), calls, their results and replies. */
function toolConversation(index: number, texts: readonly string[]): {messages: ChatMessageInput[]; tools: ChatToolInput[]} {
    let next = index * 11 + 3;
    const text = () => texts[next++ % texts.length].trim() || "hello";
    const raw = () => texts[next++ % texts.length];
    const tools =
        index % 5 === 4 ? [] : toolDefinitions.filter((_, toolIndex) => ((index >> toolIndex) & 1) === 1 || toolIndex === index % 4);
    const names = (tools.length > 0 ? tools : toolDefinitions).map((tool) => tool.function.name);
    const argumentsFor = (name: string, call: number): string => {
        switch (name) {
            case "get_weather":
                return JSON.stringify(call % 2 === 0 ? {city: raw(), unit: "celsius"} : {city: raw()});
            case "search":
                return JSON.stringify({query: raw(), limit: 1 + ((index + call) % 7), filters: {site: "example.org", after: "2024-06-01"}});
            case "set_flags":
                return JSON.stringify({flags: [true, false, index % 3 === 0], ratio: 0.25 + index, note: call % 2 === 0 ? null : raw()});
            default:
                return "{}";
        }
    };
    const messages: ChatMessageInput[] = [];
    if (index % 3 === 0) messages.push({role: "system", content: text()});
    messages.push({role: "user", content: text()});
    const rounds = 1 + (index % 2);
    for (let round = 0; round < rounds; round++) {
        const callCount = 1 + ((index + round) % 3);
        const calls = Array.from({length: callCount}, (_, call) => {
            const name = names[(index + round + call) % names.length];
            return {id: `call_${index}_${round}_${call}`, type: "function" as const, function: {name, arguments: argumentsFor(name, call)}};
        });
        const content = (index + round) % 3 === 0 ? text() : (index + round) % 3 === 1 ? null : "";
        messages.push({role: "assistant", content, tool_calls: calls});
        for (const call of calls)
            messages.push({
                role: "tool",
                tool_call_id: call.id,
                content: index % 4 === 1 ? JSON.stringify({result: raw(), ok: true}) : text()
            });
        if (round < rounds - 1 || index % 2 === 0) {
            messages.push({role: "assistant", content: text()});
            messages.push({role: "user", content: text()});
        }
    }
    return {messages, tools};
}

async function waitForHealth(base: string, process: ChildProcess): Promise<void> {
    for (let attempt = 0; attempt < 300; attempt++) {
        if (process.exitCode !== null) throw new Error(`llama-server exited with ${process.exitCode}`);
        try {
            if ((await fetch(`${base}/health`)).ok) return;
        } catch {
            // not listening yet
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error("llama-server did not become healthy in 30 s");
}

describe.skipIf(!existsSync(llamaServer)).each(["qwen3", "llama3", "gemma3"] as TokenizerFamily[])(
    "%s chat template against llama-server's /apply-template",
    (family) => {
        let directory: string;
        let model: ModelBackend;
        let server: ChildProcess;
        let base: string;
        let source: string;

        beforeAll(async () => {
            directory = await mkdtemp(join(tmpdir(), `specgate-template-${family}-`));
            const vocabulary = await familyVocabulary(family);
            const {draftPath} = await writeRandomLlamaPair({
                directory,
                seed: 1,
                vocabulary,
                target: {embeddingLength: 16, blockCount: 1, headCount: 2, headCountKv: 2, feedForwardLength: 32},
                draft: {embeddingLength: 8, blockCount: 1, headCount: 1, headCountKv: 1, feedForwardLength: 16}
            });
            source = GgufReader.readHeader(draftPath).metadata.get("tokenizer.chat_template")!.value as string;
            model = await loadModelBackend(draftPath, {threads: 1, contextSize: 256});
            const port = await freePort();
            base = `http://127.0.0.1:${port}`;
            server = spawn(
                llamaServer,
                ["-m", draftPath, "--host", "127.0.0.1", "--port", String(port), "-c", "256", "-t", "1", "--jinja"],
                {stdio: "ignore"}
            );
            await waitForHealth(base, server);
        }, 120_000);
        afterAll(async () => {
            server?.kill();
            await model?.dispose();
            await rm(directory, {recursive: true, force: true});
        });

        // As serve builds it: BOS and EOS texts for templates that write {{ bos_token }} (llama3).
        const servedTemplate = () => {
            const tokens = model.vocabularyDescription!().tokens;
            return ggufChatTemplate(model, source, {bos: tokens[model.bosToken!], eos: tokens[model.eosToken!]});
        };

        it(`renders ${conversations} conversations exactly as llama.cpp does`, async () => {
            const template = servedTemplate();
            // Gemma 3's template iterates text parts; Qwen3's and Llama 3's concatenate strings.
            expect(template.contentForm).toBe(family === "gemma3" ? "both" : "string");
            const texts = multilingualCorpus(400, 23);
            const mismatches: string[] = [];
            for (let index = 0; index < conversations; index++) {
                const messages = conversation(index, texts);
                const response = await fetch(`${base}/apply-template`, {
                    method: "POST",
                    headers: {"content-type": "application/json"},
                    body: JSON.stringify({messages})
                });
                expect(response.status).toBe(200);
                const {prompt} = (await response.json()) as {prompt: string};
                if (template.renderText(messages) !== prompt)
                    mismatches.push(JSON.stringify({messages, ours: template.renderText(messages), llamaCpp: prompt}));
            }
            expect(mismatches).toEqual([]);
        }, 120_000);

        it(`renders ${conversations} conversations with tool definitions, tool calls and tool results exactly as llama.cpp does`, async () => {
            const template = servedTemplate();
            // Qwen3's template writes `tool_call.arguments | tojson` (object arguments); Llama 3's and Gemma 3's ignore tool calls.
            const texts = multilingualCorpus(400, 29);
            const mismatches: string[] = [];
            let toolCalls = 0;
            for (let index = 0; index < conversations; index++) {
                const {messages, tools} = toolConversation(index, texts);
                toolCalls += messages.filter((message) => message.role === "tool").length;
                const response = await fetch(`${base}/apply-template`, {
                    method: "POST",
                    headers: {"content-type": "application/json"},
                    body: JSON.stringify({messages, ...(tools.length > 0 ? {tools} : {})})
                });
                const body = await response.text();
                if (family === "gemma3") {
                    // Gemma 3's template raises on any role but alternating user/model turns: both engines refuse.
                    expect(response.status, body).toBe(400);
                    expect(body).toContain("Conversation roles must alternate");
                    expect(() => template.renderText(messages, tools)).toThrow(
                        /messages: the model's chat template rejected these messages: .*Conversation roles must alternate/
                    );
                    continue;
                }
                expect(response.status, body).toBe(200);
                const {prompt} = JSON.parse(body) as {prompt: string};
                const ours = template.renderText(messages, tools);
                if (ours !== prompt) mismatches.push(JSON.stringify({messages, tools, ours, llamaCpp: prompt}));
            }
            expect(toolCalls).toBeGreaterThanOrEqual(conversations);
            expect(template.objectArguments).toBe(family === "qwen3");
            expect(mismatches).toEqual([]);
            if (family === "qwen3") {
                // The tool definitions and the calls' arguments are in the prompt, not dropped.
                const {messages, tools} = toolConversation(1, texts);
                const text = template.renderText(messages, tools);
                expect(text).toContain('<tools>\n{"type": "function", "function": {"name": ');
                expect(text).toContain('<tool_call>\n{"name": ');
                expect(text).toContain("<tool_response>\n");
            }
        }, 120_000);
    }
);
