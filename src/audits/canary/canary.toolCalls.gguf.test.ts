import {mkdtemp, readFile, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import type {ChatMessage, ChatTool} from "../../chat/ChatMessage.js";
import {loadModelBackend} from "../../backend/loadModelBackend.js";
import type {ModelBackend} from "../../backend/ModelBackend.js";
import {runCanaryCommand} from "../../cli/commands/canaryCommand.js";
import {EmbeddedDecodePath} from "../../decodePaths/EmbeddedDecodePath.js";
import {OpenAiDecodePath} from "../../decodePaths/OpenAiDecodePath.js";
import {hfBpeVocabulary} from "../../gguf/hfBpeVocabulary.js";
import {writeRandomLlamaPair, type RandomLlamaPair} from "../../gguf/randomLlamaModel.js";
import {readFamilyTokenizerFiles, tokenizerFamilies} from "../../gguf/tokenizerFamilies.js";
import {ggufFileChatTemplate} from "../../chat/ggufChatTemplate.js";
import {type RunningServeServer, startServeServer} from "../../serve/startServeServer.js";
import type {CanaryResult} from "./runCanary.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/**
 * The drift canary on agent conversations over the qwen3 fixture (Qwen's vocabulary and ChatML
 * template with its tool blocks): items carry tools, assistant tool calls and tool results. Target-only
 * in process against `specgate serve` (strict, draft 128 tokens shorter) over HTTP passes; two lossy
 * configurations that copy earlier tool calls out of the prompt (an n-gram drafter whose every
 * proposal is accepted, with different match lengths) emit different calls, and the canary reports
 * which arguments differ.
 */
let directory: string;
let pair: RandomLlamaPair;
let prompts: string;
let target: ModelBackend;
let draft: ModelBackend;
let server: RunningServeServer;

const tools: ChatTool[] = [
    {
        type: "function",
        function: {
            name: "get_weather",
            description: "Weather forecast — 天気予報",
            parameters: {type: "object", properties: {city: {type: "string"}, days: {type: "integer"}}, required: ["city"]}
        }
    }
];
// A long shared tail makes the last tool result match the earlier ones over many tokens.
const tail = " Quelle: Wetterdienst 気象庁, stündlich aktualisiert; Daten können bis zu zehn Minuten verzögert sein. मौसम सेवा 😀";
const call = (id: string, city: string, days: number) => ({
    id,
    type: "function" as const,
    function: {name: "get_weather", arguments: JSON.stringify({city, days})}
});

/**
 * Three calls and their results; the last result repeats the first word for word. An n-gram copy
 * of the longest earlier match continues with the call that followed the first result (大阪, 3 days);
 * with matches capped at 32 tokens every earlier result ties and the most recent call is copied (東京, 1).
 */
function agentConversation(question: string): ChatMessage[] {
    return [
        {role: "system", content: "You are a weather agent. Use the tools."},
        {role: "user", content: question},
        {role: "assistant", content: "", tool_calls: [call("c1", "大阪", 2)]},
        {role: "tool", tool_call_id: "c1", content: `Long report A.${tail}${tail}`},
        {role: "assistant", content: "", tool_calls: [call("c2", "大阪", 3)]},
        {role: "tool", tool_call_id: "c2", content: `Short B.${tail}`},
        {role: "assistant", content: "", tool_calls: [call("c3", "東京", 1)]},
        {role: "tool", tool_call_id: "c3", content: `Long report A.${tail}${tail}`}
    ];
}

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-canary-tools-"));
    const vocabulary = hfBpeVocabulary(await readFamilyTokenizerFiles("qwen3"), tokenizerFamilies.qwen3.options);
    pair = await writeRandomLlamaPair({
        directory,
        seed: 3,
        vocabulary,
        targetPaddingTokens: 128,
        target: {embeddingLength: 32, blockCount: 1, headCount: 2, headCountKv: 2, feedForwardLength: 64, contextLength: 2048},
        draft: {embeddingLength: 16, blockCount: 1, headCount: 1, headCountKv: 1, feedForwardLength: 32, contextLength: 2048}
    });
    prompts = join(directory, "agent.jsonl");
    const questions = ["Weather in 大阪 for a few days?", "और टोक्यो में? 😀", "Wetter in Osaka, bitte."];
    // And one prompt longer than the 2,048-token context: skipped and listed on both paths, in process and over HTTP.
    const tooLong = {id: "long", task: "tool-call", prompt: "東京 hello 😀 ".repeat(700)};
    await writeFile(
        prompts,
        [
            ...questions.map((question, index) =>
                JSON.stringify({id: `agent${index}`, task: "tool-call", messages: agentConversation(question), tools})
            ),
            JSON.stringify(tooLong)
        ].join("\n")
    );
    target = await loadModelBackend(pair.targetPath, {threads: 1, contextSize: 2048});
    draft = await loadModelBackend(pair.draftPath, {threads: 1, contextSize: 2048});
    server = await startServeServer({
        target,
        draft,
        chatTemplate: ggufFileChatTemplate(target, pair.targetPath),
        modelName: "qwen3-agent",
        speculative: {policy: {kind: "strict"}, gamma: 4},
        port: 0
    });
}, 120_000);

afterAll(async () => {
    await server?.close();
    await draft?.dispose();
    await target?.dispose();
    await rm(directory, {recursive: true, force: true});
});

describe("canary on tool-call conversations over the qwen3 fixture", () => {
    it("the embedded path and the server render the same prompt, tools and tool calls included", async () => {
        const embedded = await EmbeddedDecodePath.open("embedded", {target: pair.targetPath});
        const http = new OpenAiDecodePath("served", {baseUrl: `${server.url}/v1`, model: "qwen3-agent"});
        try {
            const request = {messages: agentConversation("x"), tools, maxTokens: 4, temperature: 0};
            const [a, b] = [await embedded.complete(request), await http.complete(request)];
            const promptTokens = a.diagnostics!.promptTokens as number;
            expect((b.diagnostics!.usage as {prompt_tokens: number}).prompt_tokens).toBe(promptTokens);
            // The tools are rendered: without them the prompt is shorter.
            const withoutTools = await embedded.complete({...request, tools: undefined});
            expect(withoutTools.diagnostics!.promptTokens as number).toBeLessThan(promptTokens);
            expect(b.text).toBe(a.text);
        } finally {
            await embedded.dispose();
            await http.dispose();
        }
    }, 60_000);

    it("passes target-only in process against strict speculative serve over HTTP; the long prompt is skipped on both", async () => {
        const json = join(directory, "pass.json");
        const outcome = await runCanaryCommand({
            a: `embedded:target=${pair.targetPath}`,
            b: `openai:base=${server.url}/v1,model=qwen3-agent`,
            prompts,
            maxTokens: "12",
            // 3 prompts compared can rule out a high rate only (95% upper bound 56%).
            maxMismatch: "0.9",
            json
        });
        expect(outcome.stderr).toBe("");
        expect(outcome.exitCode).toBe(0);
        expect(outcome.stdout).toContain("**PASS**");
        expect(outcome.stdout).toContain("- exact match: 3 / 3 (100.00%)");
        expect(outcome.stdout).toContain("skipped (prompt exceeds the context): 1");
        const result = JSON.parse(await readFile(json, "utf8")) as CanaryResult;
        expect(result.errors).toEqual([]);
        expect(result.skipped).toEqual([
            {id: "long", path: "a", message: expect.stringMatching(/with 12 generated tokens that is more than the 2048-token context/)},
            {id: "long", path: "b", message: expect.stringMatching(/HTTP 400: .*context/)}
        ]);
    }, 60_000);

    it("reports the tool-call arguments two lossy configurations disagree on", async () => {
        const copying = (maximumMatch: number) =>
            `embedded:target=${pair.targetPath},drafter=ngram:3:${maximumMatch}:64,gamma=64,policy=random,policy.acceptanceProbability=1`;
        const json = join(directory, "drift.json");
        const report = join(directory, "drift.md");
        const outcome = await runCanaryCommand({a: copying(32), b: copying(64), prompts, maxTokens: "40", json, report});
        expect(outcome.exitCode).toBe(1);
        expect(outcome.stderr).toMatch(/drift: mismatch rate 100\.00% exceeds/);
        const result = JSON.parse(await readFile(json, "utf8")) as CanaryResult;
        expect(result.toolCallOutputs).toBe(3);
        expect(result.toolCallArgumentMismatches).toBe(3);
        for (const mismatch of result.mismatches) {
            expect(mismatch.toolCallDifferences).toEqual([
                {
                    call: 0,
                    name: "get_weather",
                    differences: [
                        {path: "$.city", a: "東京", b: "大阪"},
                        {path: "$.days", a: 1, b: 3}
                    ]
                }
            ]);
        }
        const markdown = await readFile(report, "utf8");
        expect(markdown).toContain("## Tool-call argument differences");
        expect(markdown).toContain("| `agent0` | get_weather | `$.days` | `1` | `3` |");
    }, 60_000);
});
