/**
 * A multi-turn chat against `specgate serve`: what its prompt cache saves on the time to the first token.
 *
 * Each round is a fresh conversation of --turns turns (default 5). Turn k sends the whole history
 * (system message, the user and assistant messages so far, a new user message) to
 * /v1/chat/completions, streaming, T = 0, max_tokens M, and sends it TWICE, back to back: once with
 * `cache_prompt: true` (the server may start from a cached sequence that shares a prefix with the
 * prompt) and once with `cache_prompt: false` (the whole prompt is decoded again); which of the two
 * goes first alternates by turn and round. The two go to two instances of the same server, started
 * alike, one for each: on one instance the uncached request, sent first, would leave turn k's whole
 * prompt in the slot, and the cached one would then find all of it (a chat finds turn k − 1's). The
 * assistant message appended to the history is the reply to the cached request (T = 0: both replies
 * should be the same; differences are counted), or with --replies canned a fixed sentence of M
 * characters (the d768 pair has random weights: its replies are byte noise, which need not tokenize
 * back to the same tokens).
 *
 * Per turn: TTFT (request sent → first event carrying non-empty delta.content, prompt processing
 * included) of both, the median over rounds, their ratio, and the prompt and cached tokens the server
 * reported in usage (stream_options.include_usage; specgate: usage.prompt_tokens_details.cached_tokens,
 * llama-server: the same, or timings.cache_n). Target: at the last turn, TTFT with the cache ≤ 0.5×
 * TTFT without.
 *
 * Arms (--arms, default specgate,llama-server), each as two instances (cache on, cache off): specgate
 * serve as bench/serveLoad.ts starts it (draft model, --policy strict --gamma 4 --draft-sampling
 * greedy --min-confidence 0, T = 0), with --max-concurrency 1 and --context-size C; llama-server with
 * the same pair, draft flags and threads, -np 1 -c C (its prompt cache as it comes), and a chat
 * template (--chat-template-file) that renders the conversation exactly as specgate's plain chat
 * format does ("System: …\nUser: …\nAssistant: …\nAssistant:"), so both decode the same prompt;
 * `cache_prompt` is its request field too. The arms' conversations alternate in order from round to
 * round.
 *
 * Cases (--case): family, the shipped pair (models/target, models/draft; context 256 tokens, so short
 * turns and M = 12, ≈ 225 prompt tokens at turn 5; the script checks prompt + M against the context;
 * the model is so small that prompt processing takes about a millisecond, so TTFT there is mostly the
 * servers' own overhead); d768, the d768×8 F32 target and d256×2 draft under
 * .specgate/bench-native/d768 (npm run bench:native -- --cases d768 writes them; context 512, longer
 * turns so prompt processing matters, ≈ 470 prompt tokens at turn 5, M = 32, canned replies).
 *
 *   npx tsx bench/chatTurnsBench.ts                        # family pair, 5 rounds of 5 turns, both arms
 *   npx tsx bench/chatTurnsBench.ts --case d768            # the d768 pair
 *   npx tsx bench/chatTurnsBench.ts --rounds 1 --arms specgate   # smoke run
 *   npx tsx bench/chatTurnsBench.ts --case d768 --target T.gguf --draft D.gguf   # the d768 conversation on another byte-vocabulary pair
 *
 * JSON (settings, commands, every request): --json FILE, default .specgate/bench-chat/result-<date>.json;
 * server logs under .specgate/bench-chat/logs/. The Markdown goes to stdout, progress to stderr.
 */
import {existsSync} from "node:fs";
import {mkdir, writeFile} from "node:fs/promises";
import {cpus, loadavg} from "node:os";
import {dirname, join, resolve} from "node:path";
import {fileURLToPath} from "node:url";
import {parseArgs} from "node:util";
import {freePort} from "../src/serve/testing/freePort.js";
import {draftModelFlags, llamaServerSampling} from "./llamaCppTools.js";
import {commandLine, fixed, log, median, sseData, startServerProcess, stopServerProcess, writeJsonResult} from "./benchUtilities.js";

// ---------------------------------------------------------------------------------------------
// Settings

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const {values} = parseArgs({
    options: {
        case: {type: "string", default: "family"},
        target: {type: "string"},
        draft: {type: "string"},
        rounds: {type: "string", default: "5"},
        turns: {type: "string", default: "5"},
        "max-tokens": {type: "string"},
        replies: {type: "string"},
        gamma: {type: "string", default: "4"},
        threads: {type: "string", default: "1"},
        arms: {type: "string", default: "specgate,llama-server"},
        json: {type: "string"}
    }
});

type ArmName = "specgate" | "llama-server";
interface ChatCase {
    label: string;
    target: string;
    draft: string;
    /** The target's training context: the servers get this much per sequence. */
    context: number;
    maxTokens: number;
    replies: "model" | "canned";
    /** The system message of round r (each round is a fresh conversation: it starts differently). */
    system: (round: number) => string;
    /** The user message of turn t (0-based) in round r. */
    user: (round: number, turn: number) => string;
}

const fixtureDirectory = join(root, ".specgate/bench-native");
const cases: Record<string, ChatCase> = {
    family: {
        label: "shipped family pair (models/target, models/draft)",
        target: join(root, "models/target/model.gguf"),
        draft: join(root, "models/draft/model.gguf"),
        context: 256,
        // 5 turns of the model's 12-token replies come to ≈ 230 tokens of prompt.
        maxTokens: 12,
        replies: "model",
        system: (round) => `#${round + 1} Be brief.`,
        user: (round, turn) =>
            [
                `What is ${3 + round}+4?`,
                `Repeat: ${41 + round} Rome`,
                `Timer ${5 + round} min.`,
                `What is ${12 + round}-7?`,
                `How to swim?`,
                `Repeat: ${7 + round} Oslo`
            ][turn % 6]
    },
    d768: {
        label: "d768×8 F32 target, d256×2 draft (random weights, `specgate fixtures`, see bench/nativeComparison.ts)",
        target: join(fixtureDirectory, "d768/target.gguf"),
        draft: join(fixtureDirectory, "d768/draft.gguf"),
        context: 512,
        maxTokens: 32,
        replies: "canned",
        // ≈ 470 tokens of prompt at turn 5 (byte vocabulary: a token per character), + 32 generated.
        system: (round) => `Chat ${round + 1}. You are a travel agent; answer in one short line.`,
        user: (round, turn) =>
            [
                `${3 + round} days in Lisbon in May: what to see?`,
                `How far is the airport from the centre?`,
                `Sintra or Cascais for a day trip, why?`,
                `Is a ${3 + round}-day travel card worth it?`,
                `One quiet restaurant by the river?`,
                `What to pack for Lisbon weather in May?`
            ][turn % 6]
    }
};
const namedCase = cases[values.case];
if (namedCase === undefined) throw new Error(`unknown --case ${values.case} (known: ${Object.keys(cases).join(", ")})`);
/** --target and --draft replace the case's pair (its conversation and context stay). */
const chatCase: ChatCase =
    values.target !== undefined && values.draft !== undefined
        ? {
              ...namedCase,
              label: `${values.target} + ${values.draft} (the ${values.case} conversation)`,
              target: resolve(values.target),
              draft: resolve(values.draft)
          }
        : namedCase;
const rounds = Number(values.rounds);
const turns = Number(values.turns);
const maxTokens = Number(values["max-tokens"] ?? chatCase.maxTokens);
const replies = (values.replies ?? chatCase.replies) as "model" | "canned";
if (replies !== "model" && replies !== "canned") throw new Error(`--replies is model or canned, got ${replies as string}`);
const gamma = Number(values.gamma);
const threads = Number(values.threads);
const armNames = values.arms.split(",") as ArmName[];
for (const arm of armNames) if (arm !== "specgate" && arm !== "llama-server") throw new Error(`unknown arm ${arm as string}`);
const outDirectory = join(root, ".specgate/bench-chat");
const logDirectory = join(outDirectory, "logs");
const llamaServerBinary = join(root, "native/build/baselines/bin/llama-server");
/** specgate's plain chat format (src/chat/renderMessagesAsText.ts) as a Jinja template, for llama-server. */
const plainChatTemplate =
    "{%- for message in messages -%}" +
    "{{- ('System' if message.role == 'system' else ('User' if message.role == 'user' else 'Assistant')) + ': ' + message.content + '\\n' -}}" +
    "{%- endfor -%}" +
    "{%- if add_generation_prompt -%}{{- 'Assistant:' -}}{%- endif -%}";
/** The canned assistant message of turn t: M characters (one token each in the byte vocabulary). */
const cannedReply = (turn: number): string =>
    `Noted for step ${turn + 1}: a short answer follows here, kept brief and plain.`.padEnd(maxTokens, ".").slice(0, maxTokens);

// ---------------------------------------------------------------------------------------------
// Helpers

// ---------------------------------------------------------------------------------------------
// The servers

interface Server {
    arm: ArmName;
    /** The instance for cache_prompt true (or false). */
    cache: boolean;
    url: string;
    command: string;
    logFile: string;
    stop(): Promise<void>;
}

async function startServer(arm: ArmName, cache: boolean): Promise<Server> {
    const port = await freePort();
    let binary: string;
    let args: string[];
    if (arm === "llama-server") {
        const templateFile = join(outDirectory, "plain-chat-template.jinja");
        await writeFile(templateFile, plainChatTemplate);
        binary = llamaServerBinary;
        args = [
            "-m",
            chatCase.target,
            ...draftModelFlags(chatCase.draft, gamma),
            ...["-t", String(threads), "-tb", String(threads), "-td", String(threads), "-tbd", String(threads)],
            ...["-c", String(chatCase.context), "-np", "1", "--jinja", "--chat-template-file", templateFile],
            ...["--metrics", "--no-webui", "--host", "127.0.0.1", "--port", String(port)]
        ];
    } else {
        binary = join(root, "node_modules/.bin/tsx");
        args = [
            join(root, "src/cli/main.ts"),
            "serve",
            ...["--target", chatCase.target, "--draft", chatCase.draft],
            ...["--policy", "strict", "--gamma", String(gamma), "--draft-sampling", "greedy", "--min-confidence", "0"],
            ...["--temperature", "0", "--top-k", "0", "--top-p", "1", "--min-p", "0"],
            ...["--threads", String(threads), "--context-size", String(chatCase.context), "--max-concurrency", "1", "--max-queue", "4"],
            ...["--host", "127.0.0.1", "--port", String(port)]
        ];
    }
    const logFile = join(logDirectory, `${arm}-cache-${cache ? "on" : "off"}.log`);
    const url = `http://127.0.0.1:${port}`;
    const child = await startServerProcess(arm, binary, args, logFile, url);
    return {arm, cache, url, command: commandLine([binary, ...args]), logFile, stop: () => stopServerProcess(child)};
}

// ---------------------------------------------------------------------------------------------
// The client

interface ChatMessage {
    role: "system" | "user" | "assistant";
    content: string;
}

interface TurnRecord {
    arm: ArmName;
    round: number;
    turn: number;
    cache: boolean;
    /** Sent first of the pair. */
    first: boolean;
    ttftMs: number;
    totalMs: number;
    promptTokens: number;
    cachedTokens: number;
    completionTokens: number;
    reply: string;
    error?: string;
}

interface ChatChunk {
    choices?: Array<{delta?: {content?: string | null}; finish_reason?: string | null}>;
    usage?: {prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: {cached_tokens?: number}} | null;
    timings?: {cache_n?: number; prompt_n?: number; predicted_n?: number};
    error?: unknown;
}

async function chatOnce(server: Server, messages: readonly ChatMessage[], cache: boolean, tokens: number) {
    const common = {messages, max_tokens: tokens, stream: true, stream_options: {include_usage: true}, cache_prompt: cache};
    const body = server.arm === "specgate" ? {...common, temperature: 0, top_p: 1} : {...common, ...llamaServerSampling(0)};
    const sent = performance.now();
    const response = await fetch(`${server.url}/v1/chat/completions`, {
        method: "POST",
        headers: {"content-type": "application/json"},
        body: JSON.stringify(body)
    });
    if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${(await response.text()).slice(0, 300)}`);
    let first: number | undefined;
    let reply = "";
    let promptTokens = Number.NaN;
    let cachedTokens = Number.NaN;
    let completionTokens = Number.NaN;
    for await (const data of sseData(response.body!)) {
        if (data === "[DONE]") break;
        const now = performance.now();
        const chunk = JSON.parse(data) as ChatChunk;
        if (chunk.error !== undefined) throw new Error(`stream error: ${JSON.stringify(chunk.error)}`);
        if (chunk.usage != null) {
            promptTokens = chunk.usage.prompt_tokens ?? promptTokens;
            completionTokens = chunk.usage.completion_tokens ?? completionTokens;
            cachedTokens = chunk.usage.prompt_tokens_details?.cached_tokens ?? cachedTokens;
        }
        if (chunk.timings?.cache_n !== undefined && !Number.isFinite(cachedTokens)) cachedTokens = chunk.timings.cache_n;
        const content = chunk.choices?.[0]?.delta?.content ?? "";
        if (content === "") continue;
        first ??= now;
        reply += content;
    }
    const end = performance.now();
    return {
        ttftMs: first !== undefined ? first - sent : Number.NaN,
        totalMs: end - sent,
        promptTokens,
        cachedTokens,
        completionTokens,
        reply
    };
}

/** One conversation of `turns` turns of an arm, each turn sent with and without the prompt cache (to its two instances). */
async function conversation(instances: {on: Server; off: Server}, round: number, records: TurnRecord[]): Promise<void> {
    const arm = instances.on.arm;
    const messages: ChatMessage[] = [{role: "system", content: chatCase.system(round)}];
    for (let turn = 0; turn < turns; turn++) {
        messages.push({role: "user", content: chatCase.user(round, turn)});
        const order = (round + turn) % 2 === 0 ? [true, false] : [false, true];
        const pair: TurnRecord[] = [];
        for (const cache of order) {
            const base = {arm, round, turn, cache, first: cache === order[0]};
            try {
                pair.push({...base, ...(await chatOnce(cache ? instances.on : instances.off, messages, cache, maxTokens))});
            } catch (error) {
                const cause = (error as Error).cause as Error | undefined;
                pair.push({
                    ...base,
                    ttftMs: Number.NaN,
                    totalMs: Number.NaN,
                    promptTokens: Number.NaN,
                    cachedTokens: Number.NaN,
                    completionTokens: Number.NaN,
                    reply: "",
                    error: `${(error as Error).message}${cause !== undefined ? ` (${cause.message})` : ""}`
                });
            }
        }
        records.push(...pair);
        const cached = pair.find((record) => record.cache)!;
        const uncached = pair.find((record) => !record.cache)!;
        log(
            `${arm} round ${round + 1} turn ${turn + 1}: prompt ${cached.promptTokens} tokens, ${cached.cachedTokens} cached; TTFT ${fixed(cached.ttftMs)} ms with cache, ${fixed(uncached.ttftMs)} ms without` +
                `${cached.error !== undefined || uncached.error !== undefined ? `; error: ${cached.error ?? uncached.error}` : ""}`
        );
        // Trimmed: the prompt ends in "Assistant:" and the reply starts with its space; the template adds ": " itself.
        messages.push({role: "assistant", content: replies === "canned" ? cannedReply(turn) : cached.reply.trim()});
    }
}

// ---------------------------------------------------------------------------------------------
// Run

async function main(): Promise<void> {
    for (const path of [chatCase.target, chatCase.draft])
        if (!existsSync(path))
            throw new Error(`missing ${path} (the d768 pair: npm run bench:native -- --cases d768 writes it, or specgate fixtures)`);
    if (armNames.includes("llama-server") && !existsSync(llamaServerBinary))
        throw new Error(`missing ${llamaServerBinary}: npm run build:baselines`);
    await mkdir(logDirectory, {recursive: true});
    const startedAt = new Date();
    const loadAtStart = loadavg();
    log(
        `${chatCase.label}: arms ${armNames.join(",")}, ${rounds} round(s) of ${turns} turns, max_tokens ${maxTokens}, ${replies} replies, γ=${gamma}, ${threads} thread(s), context ${chatCase.context}; load ${loadAtStart.map((x) => x.toFixed(2)).join(" ")}`
    );
    const records: TurnRecord[] = [];
    const commands: Record<string, string> = {};
    const servers: Server[] = [];
    const arms: Array<{on: Server; off: Server}> = [];
    try {
        for (const arm of armNames) {
            const instances = {on: await startServer(arm, true), off: await startServer(arm, false)};
            servers.push(instances.on, instances.off);
            arms.push(instances);
            commands[arm] = instances.on.command;
            // Untimed warm-up (first-touch allocations, JIT, thread pools), each instance in its mode.
            const warm: ChatMessage[] = [{role: "user", content: "Hello."}];
            for (const server of [instances.on, instances.off]) await chatOnce(server, warm, server.cache, 4);
        }
        for (let round = 0; round < rounds; round++)
            for (const instances of round % 2 === 0 ? arms : [...arms].reverse()) await conversation(instances, round, records);
    } finally {
        for (const server of servers) await server.stop();
    }

    const summarize = (arm: ArmName, turn: number) => {
        const rows = records.filter((record) => record.arm === arm && record.turn === turn);
        const on = rows.filter((record) => record.cache);
        const off = rows.filter((record) => !record.cache);
        const ttftOn = median(on.map((record) => record.ttftMs));
        const ttftOff = median(off.map((record) => record.ttftMs));
        return {
            arm,
            turn: turn + 1,
            promptTokens: median(rows.map((record) => record.promptTokens)),
            promptTokensMax: Math.max(...rows.map((record) => record.promptTokens).filter(Number.isFinite)),
            cachedTokensOn: median(on.map((record) => record.cachedTokens)),
            cachedTokensOff: median(off.map((record) => record.cachedTokens)),
            completionTokens: median(rows.map((record) => record.completionTokens)),
            ttftOn,
            ttftOff,
            ratio: ttftOn / ttftOff,
            // Per round the two requests of a turn ran back to back: the median of their ratios.
            pairedRatio: median(
                on.map((record) => record.ttftMs / (off.find((other) => other.round === record.round)?.ttftMs ?? Number.NaN))
            ),
            errors: rows.filter((record) => record.error !== undefined).length,
            // T = 0: the same prompt should get the same reply with and without the cache.
            differentReplies: on.filter((record) => {
                const other = off.find((entry) => entry.round === record.round);
                return other !== undefined && record.error === undefined && other.error === undefined && other.reply !== record.reply;
            }).length
        };
    };
    const summaries = armNames.flatMap((arm) => Array.from({length: turns}, (_value, turn) => summarize(arm, turn)));

    const lines: string[] = [];
    const machine = `${cpus().length}-core ${cpus()[0]?.model ?? "CPU"}, ${process.platform}, Node ${process.version}`;
    lines.push(`Case: ${chatCase.label}. Machine: ${machine}. Date: ${startedAt.toISOString()}.`);
    lines.push(`Load average (1 min) at start ${fixed(loadAtStart[0], 2)}, at end ${fixed(loadavg()[0], 2)}.`);
    lines.push(
        `Settings: ${rounds} round(s) of ${turns} turns (a fresh conversation each), every turn sent with cache_prompt true and false back to back (alternating which first), ` +
            `streaming /v1/chat/completions, T = 0, max_tokens ${maxTokens}, ${replies === "model" ? "the model's replies (trimmed)" : "canned replies"} in the history, ` +
            `γ = ${gamma} (specgate strict, draft model), ${threads} thread(s) per model, one slot, context ${chatCase.context}; ` +
            `two instances of each server, one for the cached requests and one for the uncached.`
    );
    for (const arm of armNames) {
        lines.push("", `### ${arm}`, "");
        lines.push(
            "| turn | prompt tokens | cached tokens (cache on / off) | TTFT p50 ms, cache on | TTFT p50 ms, cache off | ratio (on / off) | paired ratio | completion tokens | errors |"
        );
        lines.push("|---|---|---|---|---|---|---|---|---|");
        for (const row of summaries.filter((entry) => entry.arm === arm))
            lines.push(
                `| ${row.turn} | ${fixed(row.promptTokens, 0)} | ${fixed(row.cachedTokensOn, 0)} / ${fixed(row.cachedTokensOff, 0)} | ${fixed(row.ttftOn)} | ${fixed(row.ttftOff)} | **${fixed(row.ratio, 3)}** | ${fixed(row.pairedRatio, 3)} | ${fixed(row.completionTokens, 0)} | ${row.errors} |`
            );
    }
    const last = (arm: ArmName) => summaries.find((row) => row.arm === arm && row.turn === turns);
    const targets = armNames.map((arm) => ({
        target: `${arm}${arm === "specgate" ? "" : " (reference)"}: turn-${turns} TTFT with the cache ≤ 0.5× without`,
        measured: `${fixed(last(arm)?.ratio, 3)}×`,
        met: (last(arm)?.ratio ?? Number.NaN) <= 0.5
    }));
    lines.push("", "| target | measured | met |", "|---|---|---|");
    for (const entry of targets) lines.push(`| ${entry.target} | ${entry.measured} | ${entry.met ? "yes" : "**no**"} |`);
    if (armNames.includes("specgate") && armNames.includes("llama-server"))
        lines.push(
            "",
            `Turn-${turns} TTFT, specgate / llama-server: with the cache ${fixed((last("specgate")?.ttftOn ?? Number.NaN) / (last("llama-server")?.ttftOn ?? Number.NaN), 3)}×, ` +
                `without ${fixed((last("specgate")?.ttftOff ?? Number.NaN) / (last("llama-server")?.ttftOff ?? Number.NaN), 3)}×.`
        );
    const overflow = summaries.filter((row) => row.promptTokensMax + maxTokens > chatCase.context);
    if (overflow.length > 0)
        lines.push(
            "",
            `**Prompt + max_tokens above the context (${chatCase.context})**: ${overflow.map((row) => `${row.arm} turn ${row.turn}: ${row.promptTokensMax} + ${maxTokens}`).join(", ")}.`
        );
    const differing = summaries.filter((row) => row.differentReplies > 0);
    if (differing.length > 0)
        lines.push(
            "",
            `Replies that differ with and without the cache (same prompt, T = 0): ${differing.map((row) => `${row.arm} turn ${row.turn}: ${row.differentReplies}`).join(", ")}.`
        );
    const failed = records.filter((record) => record.error !== undefined);
    if (failed.length > 0) lines.push("", `Errors: ${failed.length}; first: ${failed[0].error}`);
    lines.push("", "Commands:", "");
    for (const [arm, command] of Object.entries(commands)) lines.push(`- ${arm} (each instance; its own port): \`${command}\``);
    process.stdout.write(`${lines.join("\n")}\n`);

    const jsonPath = values.json ?? join(outDirectory, `result-${startedAt.toISOString().replace(/[:.]/g, "-")}.json`);
    await writeJsonResult(jsonPath, {
        date: startedAt.toISOString(),
        finished: new Date().toISOString(),
        machine,
        loadAverage: {start: loadAtStart, end: loadavg()},
        case: {label: chatCase.label, target: chatCase.target, draft: chatCase.draft, context: chatCase.context},
        settings: {rounds, turns, maxTokens, replies, gamma, threads, arms: armNames},
        commands,
        summaries,
        targets,
        requests: records
    });
    log(`wrote ${jsonPath}`);
}

await main();
