/**
 * Load on `specgate serve` against llama-server, all speculative with the same GGUF pair, in one run.
 *
 * Arms (--arms, default specgate,llama-server-defaults,llama-server):
 *   specgate                `specgate serve --max-concurrency N` (N slots, one context of C tokens each,
 *                           its prompt cache on: cache_prompt defaults to true).
 *   llama-server            tuned to match: -c N·C -np N --no-kv-unified --cont-batching, so each of its N
 *                           slots has C tokens; its prompt cache on (its default), as specgate's.
 *   llama-server-defaults   llama-server as it comes: only the model, the draft flags, the thread flags,
 *                           --metrics, --no-webui, host and port; no -c, -np, KV or cache flags. It picks
 *                           its own slot count, context and KV layout (read from its log and printed under
 *                           the tables): it may have fewer slots than there are streams (e.g. 4 at 16),
 *                           and the clients then queue there. That is the point: what a user gets who
 *                           starts it without tuning.
 *
 * For each concurrency N (--streams, default 1,4,16) every arm's server is started afresh, warmed up,
 * and then R rounds run with the arms INTERLEAVED (round 1: the arms in order, round 2: reversed, …),
 * so load from other processes on a shared machine falls on all arms alike. In a round, N clients
 * each send --requests streaming /v1/completions one after another (prompt i of a fixed set, fixed
 * max_tokens), and the client records every content event's arrival time and the cumulative count
 * of generated tokens it carries (specgate: stream_options.continuous_usage_stats; llama-server:
 * timings_per_token, timings.predicted_n). The prompts repeat from round to round, and both servers
 * keep a prompt cache, so a later round's prompt may be served from it on either side.
 *
 * Same settings on every arm: the same target and draft GGUF, γ draft tokens a step from the draft
 * model (llama-server --spec-type draft-simple --spec-draft-n-max γ --spec-draft-n-min 0
 * --spec-draft-p-min 0; specgate --policy strict --gamma γ --draft-sampling greedy --min-confidence 0),
 * temperature 0 (greedy; strict verification is then exactly greedy decoding of the target, as is
 * llama-server's), the same threads for target and draft (-t/-tb/-td/-tbd = specgate --threads).
 * EOS is NOT ignored: specgate serve has no ignore_eos, so no arm gets it; at T = 0 all decode the
 * same greedy text and stop at the same place, and the tables count tokens actually generated.
 *
 * The Markdown has one table per llama-server arm (specgate beside it), each with the per-round
 * paired throughput ratio and its targets: throughput ≥ 1.0× at every stream level and p99 TTFT
 * ≤ 1.0×.
 *
 * Definitions (per arm, concurrency level; percentiles pooled over all rounds):
 *   throughput   generated tokens of a round / the round's wall time (first request sent → last stream
 *                ended); the median over rounds is reported, and the ratio of medians.
 *   TTFT         request sent → first event carrying non-empty text (queueing and prompt included).
 *   ITL          per token: the gap between a content event and the previous one, divided by the tokens
 *                that event added (specgate can send several tokens per event when a draft is accepted,
 *                llama-server sends one event per token, so an accepted draft arrives there as a burst
 *                of near-zero gaps); one sample per token after the first event.
 *   TPOT         per request: (last content event − first content event) / (tokens − tokens of the first
 *                event): the decode time per token a client sees, immune to how tokens are chunked.
 *
 *   npm run bench:serve                                   # d768 pair, 3 arms, 1,4,16 streams, 5 rounds, 8/2/2 requests per client, 64 tokens (≈ 20 min on 2 cores)
 *   npm run bench:serve -- --quick                        # smoke run: 1,4 streams, 1 round, 2 requests/client, 16 tokens
 *   npm run bench:serve -- --case family --streams 4 --rounds 5 --threads 2 --gamma 4 --max-tokens 64 --requests 4
 *   npm run bench:serve -- --target T.gguf --draft D.gguf --context 512 --json out.json
 *   npm run bench:serve -- --arms specgate,llama-server      # one llama-server arm only
 *   npm run bench:serve -- --specgate-args="--batching off"   # specgate serve with one context per generation (the = is needed)
 *   npm run bench:serve -- --arms specgate --gammas 0,2,4,8,auto --streams 1,4,16,32 --case twin-0.1b
 *                                                          # γ arms: one specgate server per γ (auto: --gamma auto), compared
 *                                                          # with each other; auto ÷ the best fixed γ with 95% intervals
 *
 * JSON (settings, commands, what each llama-server chose, every request, per-round figures): --json
 * FILE, default .specgate/bench-serve/result-<date>.json; server logs under .specgate/bench-serve/logs/.
 * The Markdown tables go to stdout, progress to stderr.
 */
import type {ChildProcess} from "node:child_process";
import {existsSync, readdirSync, readFileSync} from "node:fs";
import {mkdir} from "node:fs/promises";
import {cpus, loadavg} from "node:os";
import {dirname, join, resolve} from "node:path";
import {fileURLToPath} from "node:url";
import {parseArgs} from "node:util";
import {defaultBenchPrompts} from "../src/benchRunner/defaultPrompts.js";
import {freePort} from "../src/serve/testing/freePort.js";
import {draftModelFlags, llamaServerSampling} from "./llamaCppTools.js";
import {formatInterval, goalVerdict, medianInterval} from "./speedIntervals.js";
import {
    commandLine,
    fixed,
    log,
    median,
    percentile,
    sseData,
    startServerProcess,
    stopServerProcess,
    writeJsonResult
} from "./benchUtilities.js";

// ---------------------------------------------------------------------------------------------
// Settings

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const {values} = parseArgs({
    options: {
        quick: {type: "boolean", default: false},
        case: {type: "string", default: "d768"},
        target: {type: "string"},
        draft: {type: "string"},
        streams: {type: "string"},
        rounds: {type: "string"},
        requests: {type: "string"},
        "max-tokens": {type: "string"},
        gamma: {type: "string", default: "4"},
        /** One specgate arm per entry (`specgate γ=…`), e.g. 0,2,4,8,auto; each server gets --gamma with that value. */
        gammas: {type: "string"},
        threads: {type: "string", default: "1"},
        context: {type: "string", default: "512"},
        temperature: {type: "string", default: "0"},
        arms: {type: "string", default: "specgate,llama-server-defaults,llama-server"},
        /** Extra `specgate serve` flags, space-separated, e.g. "--batching off" or "--step-tokens 256". */
        "specgate-args": {type: "string", default: ""},
        json: {type: "string"}
    }
});
const quick = values.quick;
const streamLevels = (values.streams ?? (quick ? "1,4" : "1,4,16")).split(",").map(Number);
const rounds = Number(values.rounds ?? (quick ? 1 : 5));
/** Requests each client sends one after another in a round; default max(2, ⌈8 / streams⌉) (1 stream: 8, 4 and 16 streams: 2). */
const requestsOf = (streams: number): number =>
    values.requests !== undefined ? Number(values.requests) : quick ? 2 : Math.max(2, Math.ceil(8 / streams));
const maxTokens = Number(values["max-tokens"] ?? (quick ? 16 : 64));
const gamma = Number(values.gamma);
const threads = Number(values.threads);
const contextPerSlot = Number(values.context);
const temperature = Number(values.temperature);
const armNames = values.arms.split(",") as ArmName[];
const specgateExtraArgs = values["specgate-args"].split(" ").filter((part) => part !== "");
const fixtureDirectory = join(root, ".specgate/bench-native");
const outDirectory = join(root, ".specgate/bench-serve");
const logDirectory = join(outDirectory, "logs");
const llamaServerBinary = join(root, "native/build/baselines/bin/llama-server");

const llamaArms = ["llama-server-defaults", "llama-server"] as const;
type LlamaArm = (typeof llamaArms)[number];
/** `specgate γ=X`: a specgate arm of --gammas, served with --gamma X. */
type GammaArm = `specgate γ=${string}`;
type ArmName = "specgate" | GammaArm | LlamaArm;
const isLlamaArm = (arm: ArmName): arm is LlamaArm => (llamaArms as readonly string[]).includes(arm);
const isSpecgateArm = (arm: ArmName): boolean => arm === "specgate" || arm.startsWith("specgate γ=");
/** The --gamma a specgate arm's server gets. */
const gammaOfArm = (arm: ArmName): string => (arm.startsWith("specgate γ=") ? arm.slice("specgate γ=".length) : String(gamma));
for (const arm of armNames)
    if (arm !== "specgate" && !isLlamaArm(arm)) throw new Error(`unknown arm ${arm as string} (known: specgate, ${llamaArms.join(", ")})`);
const gammaArms: GammaArm[] = (values.gammas ?? "")
    .split(",")
    .filter((entry) => entry !== "")
    .map((entry) => `specgate γ=${entry}` as const);
// With --gammas the specgate arm becomes one arm per γ.
if (gammaArms.length > 0)
    armNames.splice(0, armNames.length, ...armNames.flatMap((arm): ArmName[] => (arm === "specgate" ? gammaArms : [arm])));

const familyPrompts = (): string[] =>
    readFileSync(join(root, "examples/family-prompts.jsonl"), "utf8")
        .split("\n")
        .filter((line) => line.trim() !== "")
        .map((line) => (JSON.parse(line) as {prompt: string}).prompt)
        .slice(0, 16);
const cases: Record<string, {label: string; target: string; draft: string; prompts: () => readonly string[]}> = {
    d768: {
        label: "d768×8 F32 target, d256×2 draft (random weights, `specgate fixtures`, see bench/nativeComparison.ts)",
        target: join(fixtureDirectory, "d768/target.gguf"),
        draft: join(fixtureDirectory, "d768/draft.gguf"),
        prompts: () => defaultBenchPrompts
    },
    family: {
        label: "shipped family pair (models/target, models/draft)",
        target: join(root, "models/target/model.gguf"),
        draft: join(root, "models/draft/model.gguf"),
        prompts: familyPrompts
    },
    "twin-0.1b": {
        label: "twin-0.1b (the family target widened to 768×8, F16; docs/benchmarks/twins.md) with the family draft",
        target: existsSync(join(root, ".specgate/twin-0.1b/target.gguf"))
            ? join(root, ".specgate/twin-0.1b/target.gguf")
            : join(root, ".specgate/bench-twins/twins/target-d768x8-f16.gguf"),
        draft: join(root, "models/draft/model.gguf"),
        prompts: familyPrompts
    }
};
const benchCase =
    values.target !== undefined && values.draft !== undefined
        ? {
              label: `${values.target} + ${values.draft}`,
              target: resolve(values.target),
              draft: resolve(values.draft),
              prompts: () => defaultBenchPrompts
          }
        : cases[values.case];
if (benchCase === undefined) throw new Error(`unknown --case ${values.case} (known: ${Object.keys(cases).join(", ")})`);
const prompts = benchCase.prompts();

// ---------------------------------------------------------------------------------------------
// Helpers

/**
 * CPU seconds (user + system) used so far by a process and its descendants (Linux /proc; NaN
 * elsewhere): how many cores an arm really kept busy, since `--threads` bounds one evaluation's
 * threads but not how many evaluations a server runs at once.
 */
function cpuSeconds(pid: number | undefined): number {
    if (pid === undefined) return Number.NaN;
    try {
        const ticks = 100; // USER_HZ on Linux
        const stats = new Map<number, {parent: number; seconds: number}>();
        for (const entry of readdirSync("/proc")) {
            if (!/^\d+$/.test(entry)) continue;
            try {
                const text = readFileSync(`/proc/${entry}/stat`, "utf8");
                const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
                // fields[0] is the state (field 3): ppid is field 4, utime 14, stime 15.
                stats.set(Number(entry), {parent: Number(fields[1]), seconds: (Number(fields[11]) + Number(fields[12])) / ticks});
            } catch {
                // the process ended meanwhile
            }
        }
        let total = 0;
        const pending = [pid];
        while (pending.length > 0) {
            const current = pending.pop()!;
            total += stats.get(current)?.seconds ?? 0;
            for (const [child, stat] of stats) if (stat.parent === current) pending.push(child);
        }
        return total;
    } catch {
        return Number.NaN;
    }
}

// ---------------------------------------------------------------------------------------------
// The servers

class ServerProcess {
    private constructor(
        public readonly arm: ArmName,
        private readonly child: ChildProcess,
        public readonly url: string,
        public readonly command: string,
        public readonly logFile: string
    ) {}

    public static async start(arm: ArmName, slots: number): Promise<ServerProcess> {
        const port = await freePort();
        let binary: string;
        let args: string[];
        if (isLlamaArm(arm)) {
            binary = llamaServerBinary;
            args = [
                "-m",
                benchCase.target,
                ...draftModelFlags(benchCase.draft, gamma),
                ...["-t", String(threads), "-tb", String(threads), "-td", String(threads), "-tbd", String(threads)],
                // Tuned: N slots of C tokens each, as specgate's; the defaults arm leaves all of it to llama-server.
                ...(arm === "llama-server"
                    ? ["-c", String(contextPerSlot * slots), "-np", String(slots), "--no-kv-unified", "--cont-batching"]
                    : []),
                ...["--metrics", "--no-webui", "--host", "127.0.0.1", "--port", String(port)]
            ];
        } else {
            binary = join(root, "node_modules/.bin/tsx");
            args = [
                join(root, "src/cli/main.ts"),
                "serve",
                "--target",
                benchCase.target,
                "--draft",
                benchCase.draft,
                "--policy",
                "strict",
                "--gamma",
                gammaOfArm(arm),
                "--draft-sampling",
                "greedy",
                "--min-confidence",
                "0",
                "--temperature",
                String(temperature),
                "--top-k",
                "0",
                "--top-p",
                "1",
                "--min-p",
                "0",
                "--threads",
                String(threads),
                "--context-size",
                String(contextPerSlot),
                "--max-concurrency",
                String(slots),
                "--max-queue",
                String(4 * slots + 16),
                "--host",
                "127.0.0.1",
                "--port",
                String(port),
                ...specgateExtraArgs
            ];
        }
        const logFile = join(logDirectory, `${arm.replace(/[^A-Za-z0-9:.-]+/g, "-")}-np${slots}.log`);
        const url = `http://127.0.0.1:${port}`;
        const child = await startServerProcess(arm, binary, args, logFile, url);
        return new ServerProcess(arm, child, url, commandLine([binary, ...args]), logFile);
    }

    public cpuSeconds(): number {
        return cpuSeconds(this.child.pid);
    }

    /** What llama-server chose (slots, context, KV layout), from the lines its start wrote to the log. */
    public llamaServerConfig(): LlamaServerConfig {
        const text = readFileSync(this.logFile, "utf8");
        const slots = /n_slots = (\d+), n_ctx_slot = (\d+), kv_unified = '(\w+)'/.exec(text);
        const sequence = /n_ctx_seq \((\d+)\)/.exec(text);
        return {
            slots: slots !== null ? Number(slots[1]) : Number.NaN,
            contextPerSlot: slots !== null ? Number(slots[2]) : Number.NaN,
            kvUnified: slots !== null ? slots[3] === "true" : undefined,
            contextPerSequence: sequence !== null ? Number(sequence[1]) : undefined,
            cappedToTrainingContext: /exceeds the training context of the model \(\d+\) - capping/.test(text),
            logLines: text
                .split("\n")
                .filter((line) => /n_slots =|n_ctx_seq|slot context|kv_unified/.test(line))
                .map((line) => line.replace(/^[\d.]+ [IWE] /, "").trim())
        };
    }

    /**
     * The target's decode calls and the tokens they decoded so far, from the server's /metrics.
     * specgate counts both (batch_steps_total, batch_tokens_total for model="target"). llama-server
     * counts its target llama_decode calls (n_decode_total, drafts excluded) but not their tokens:
     * each verification decodes the last token and the drafts, and accepted drafts are not decoded
     * again, so its tokens are prompt tokens + generated − accepted + drafted (an estimate, exact
     * but for the final token of each request).
     */
    public async targetDecodes(): Promise<{calls: number; tokens: number}> {
        const response = await fetch(`${this.url}/metrics`);
        const text = await response.text();
        // NaN when the server does not count it (specgate without continuous batching).
        const sum = (name: string, labels = ""): number =>
            text
                .split("\n")
                .filter(
                    (line) => line.startsWith(name) && (line[name.length] === " " || line[name.length] === "{") && line.includes(labels)
                )
                .reduce((total, line) => (Number.isNaN(total) ? 0 : total) + Number(line.slice(line.lastIndexOf(" ") + 1)), Number.NaN);
        if (isSpecgateArm(this.arm))
            return {calls: sum("batch_steps_total", 'model="target"'), tokens: sum("batch_tokens_total", 'model="target"')};
        return {
            calls: sum("llamacpp:n_decode_total"),
            tokens:
                sum("llamacpp:prompt_tokens_total") +
                sum("llamacpp:tokens_predicted_total") -
                sum("llamacpp:spec_decode_num_accepted_tokens_total") +
                sum("llamacpp:spec_decode_num_draft_tokens_total")
        };
    }

    public stop(): Promise<void> {
        return stopServerProcess(this.child);
    }
}

/** llama-server's own account of its configuration (ServerProcess.llamaServerConfig). */
interface LlamaServerConfig {
    slots: number;
    /** n_ctx_slot: the context a slot may fill. */
    contextPerSlot: number;
    kvUnified: boolean | undefined;
    /** n_ctx_seq from llama_context's warning, when it printed one (only when above the training context). */
    contextPerSequence: number | undefined;
    /** The slot context was capped to the model's training context. */
    cappedToTrainingContext: boolean;
    /** The log lines it was read from. */
    logLines: string[];
}

/** The request body each arm gets: the same prompt, token budget and greedy sampler, in each server's dialect. */
function requestBody(arm: ArmName, prompt: string, tokens: number): string {
    if (isSpecgateArm(arm))
        return JSON.stringify({
            prompt,
            max_tokens: tokens,
            temperature,
            top_p: 1,
            stream: true,
            stream_options: {include_usage: true, continuous_usage_stats: true}
        });
    return JSON.stringify({
        prompt,
        max_tokens: tokens,
        ...llamaServerSampling(temperature),
        stream: true,
        stream_options: {include_usage: true},
        timings_per_token: true
    });
}

// ---------------------------------------------------------------------------------------------
// The clients

interface RequestRecord {
    arm: ArmName;
    streams: number;
    round: number;
    client: number;
    prompt: number;
    /** ms since the round started */
    sentAt: number;
    ttftMs: number;
    totalMs: number;
    tokens: number;
    promptTokens: number;
    events: number;
    /** per-token ITL samples (ms) */
    itlMs: number[];
    tpotMs: number;
    finishReason: string | null;
    /** connection-level resends before a response (see streamOnce) */
    retries: number;
    retryCauses: string[];
    drafted?: number;
    accepted?: number;
    /** specgate: steps by the draft length chosen for them, and those --gamma auto left without a draft. */
    draftLengths?: number[];
    skippedSteps?: number;
    error?: string;
}

interface StreamChunk {
    choices?: Array<{text?: string; finish_reason?: string | null}>;
    usage?: {prompt_tokens?: number; completion_tokens?: number};
    timings?: {predicted_n?: number; prompt_n?: number; draft_n?: number; draft_n_accepted?: number};
    speculative?: {num_draft_tokens?: number; num_accepted_tokens?: number; draft_lengths?: number[]; num_skipped_steps?: number};
    error?: unknown;
}

async function streamOnce(
    server: ServerProcess,
    prompt: string,
    tokens: number,
    roundStart: number
): Promise<Omit<RequestRecord, "streams" | "round" | "client" | "prompt">> {
    const sent = performance.now();
    const record: Omit<RequestRecord, "streams" | "round" | "client" | "prompt"> = {
        arm: server.arm,
        sentAt: sent - roundStart,
        ttftMs: Number.NaN,
        totalMs: Number.NaN,
        tokens: 0,
        promptTokens: Number.NaN,
        events: 0,
        itlMs: [],
        tpotMs: Number.NaN,
        finishReason: null,
        retries: 0,
        retryCauses: []
    };
    // A kept-alive connection the server closed just as it was reused fails before any response (seen
    // rarely on llama-server at 16 streams): sent again, at most twice, counted, the time kept in TTFT.
    let response: Response | undefined;
    for (let attempt = 0; response === undefined; attempt++) {
        try {
            response = await fetch(`${server.url}/v1/completions`, {
                method: "POST",
                headers: {"content-type": "application/json"},
                body: requestBody(server.arm, prompt, tokens)
            });
        } catch (error) {
            const cause = (error as Error).cause as Error | undefined;
            if (attempt >= 2) throw error;
            record.retries++;
            record.retryCauses.push(`${(error as Error).message}${cause !== undefined ? ` (${cause.message})` : ""}`);
        }
    }
    if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${(await response.text()).slice(0, 300)}`);
    let first: number | undefined;
    let firstTokens = 0;
    let last = sent;
    let counted = 0;
    for await (const data of sseData(response.body!)) {
        if (data === "[DONE]") break;
        const now = performance.now();
        const chunk = JSON.parse(data) as StreamChunk;
        if (chunk.error !== undefined) throw new Error(`stream error: ${JSON.stringify(chunk.error)}`);
        const cumulative = chunk.usage?.completion_tokens ?? chunk.timings?.predicted_n;
        const added = cumulative !== undefined ? Math.max(0, cumulative - counted) : 0;
        if (cumulative !== undefined) counted = Math.max(counted, cumulative);
        if (chunk.usage?.prompt_tokens !== undefined) record.promptTokens = chunk.usage.prompt_tokens;
        else if (chunk.timings?.prompt_n !== undefined) record.promptTokens = chunk.timings.prompt_n;
        if (chunk.timings?.draft_n !== undefined) {
            record.drafted = chunk.timings.draft_n;
            record.accepted = chunk.timings.draft_n_accepted;
        }
        if (chunk.speculative?.num_draft_tokens !== undefined) {
            record.drafted = chunk.speculative.num_draft_tokens;
            record.accepted = chunk.speculative.num_accepted_tokens;
            record.draftLengths = chunk.speculative.draft_lengths;
            record.skippedSteps = chunk.speculative.num_skipped_steps;
        }
        const choice = chunk.choices?.[0];
        if (choice?.finish_reason != null) record.finishReason = choice.finish_reason;
        if ((choice?.text ?? "") === "") continue;
        record.events++;
        if (first === undefined) {
            first = now;
            firstTokens = Math.max(1, added);
        } else {
            const share = (now - last) / Math.max(1, added);
            for (let token = 0; token < Math.max(1, added); token++) record.itlMs.push(share);
        }
        last = now;
    }
    const end = performance.now();
    record.tokens = counted;
    record.ttftMs = (first ?? end) - sent;
    record.totalMs = end - sent;
    if (first !== undefined && counted > firstTokens) record.tpotMs = (last - first) / (counted - firstTokens);
    return record;
}

interface RoundResult {
    arm: ArmName;
    streams: number;
    round: number;
    wallSeconds: number;
    tokens: number;
    tokensPerSecond: number;
    errors: number;
    loadAverage: number;
    /** CPU seconds of the server's process tree during the round / wall seconds: cores it kept busy. */
    serverCores: number;
    /** The target's llama_decode calls during the round, and the tokens they decoded (see ServerProcess.targetDecodes). */
    targetDecodeCalls: number;
    targetDecodeTokens: number;
}

async function runRound(
    server: ServerProcess,
    streams: number,
    round: number,
    records: RequestRecord[],
    errors: string[]
): Promise<RoundResult> {
    const decodesBefore = await server.targetDecodes();
    const cpuBefore = server.cpuSeconds();
    const started = performance.now();
    const mine: RequestRecord[] = [];
    let failed = 0;
    await Promise.all(
        Array.from({length: streams}, async (_value, client) => {
            const requestsPerClient = requestsOf(streams);
            for (let request = 0; request < requestsPerClient; request++) {
                const prompt = (client * requestsPerClient + request) % prompts.length;
                try {
                    mine.push({...(await streamOnce(server, prompts[prompt], maxTokens, started)), streams, round, client, prompt});
                } catch (error) {
                    failed++;
                    const cause = (error as Error).cause as Error | undefined;
                    errors.push(
                        `${server.arm} ×${streams} round ${round + 1}: ${(error as Error).message}${cause !== undefined ? ` (${cause.message})` : ""}`
                    );
                }
            }
        })
    );
    const wallSeconds = (performance.now() - started) / 1000;
    const serverCores = (server.cpuSeconds() - cpuBefore) / wallSeconds;
    const decodesAfter = await server.targetDecodes();
    records.push(...mine);
    const tokens = mine.reduce((sum, record) => sum + record.tokens, 0);
    return {
        arm: server.arm,
        streams,
        round,
        wallSeconds,
        tokens,
        tokensPerSecond: tokens / wallSeconds,
        errors: failed,
        loadAverage: loadavg()[0],
        serverCores,
        targetDecodeCalls: decodesAfter.calls - decodesBefore.calls,
        targetDecodeTokens: decodesAfter.tokens - decodesBefore.tokens
    };
}

/** Untimed: one request alone, then one wave of `streams` short requests (first-touch allocations, JIT, thread pools). */
async function warmUp(server: ServerProcess, streams: number): Promise<void> {
    await streamOnce(server, prompts[0], 8, performance.now());
    await Promise.all(
        Array.from({length: streams}, (_value, client) => streamOnce(server, prompts[client % prompts.length], 8, performance.now()))
    );
}

/** One line for what a llama-server chose, e.g. "4 slots, 256 tokens per slot (capped to the training context), KV unified (1024 tokens shared)". */
function describeConfig(config: LlamaServerConfig): string {
    if (!Number.isFinite(config.slots)) return "not found in its log";
    const unified =
        config.kvUnified === true
            ? `KV unified${config.contextPerSequence !== undefined ? ` (${config.contextPerSequence} tokens shared)` : ""}`
            : `KV per slot${config.contextPerSequence !== undefined ? ` (${config.contextPerSequence} tokens each before capping)` : ""}`;
    return `${config.slots} slot${config.slots === 1 ? "" : "s"}, ${config.contextPerSlot} tokens per slot${config.cappedToTrainingContext ? " (capped to the training context)" : ""}, ${unified}`;
}

/** Mean draft length chosen per step and the share of steps without a draft (specgate responses; NaN elsewhere). */
function draftLengthSummary(rows: readonly RequestRecord[]): {meanDraftLength: number; skippedShare: number} {
    const counts: number[] = [];
    let skipped = 0;
    for (const row of rows) {
        row.draftLengths?.forEach((count, length) => (counts[length] = (counts[length] ?? 0) + count));
        skipped += row.skippedSteps ?? 0;
    }
    const steps = counts.reduce((sum, count) => sum + (count ?? 0), 0);
    if (steps === 0) return {meanDraftLength: Number.NaN, skippedShare: Number.NaN};
    return {meanDraftLength: counts.reduce((sum, count, length) => sum + (count ?? 0) * length, 0) / steps, skippedShare: skipped / steps};
}

/** tok/s of `top` over `bottom` in each round both ran at `streams` streams (round r of every arm ran back to back). */
function pairedRoundRatios(roundResults: readonly RoundResult[], top: ArmName, bottom: ArmName, streams: number): number[] {
    return roundResults
        .filter((result) => result.arm === top && result.streams === streams)
        .flatMap((result) => {
            const match = roundResults.find((other) => other.arm === bottom && other.streams === streams && other.round === result.round);
            return match === undefined ? [] : [result.tokensPerSecond / match.tokensPerSecond];
        });
}

/**
 * The γ arms side by side: each arm's median tok/s over rounds with its 95% bootstrap interval, the
 * best fixed γ at each level (highest median), and auto ÷ that best: the median of the per-round
 * ratios (round r of every arm ran back to back, so load that changed between rounds cancels) with
 * its interval (rounds resampled). The target (auto ≥ 0.97× the best fixed γ) counts as met only when
 * the interval's lower end is ≥ 0.97, missed when its upper end is below, and undecided otherwise.
 */
function compareGammaArms(
    roundResults: readonly RoundResult[],
    summaries: ReadonlyArray<{arm: ArmName; streams: number; meanDraftLength: number; skippedShare: number; acceptance: number}>
) {
    const rates = (arm: ArmName, streams: number) =>
        roundResults.filter((result) => result.arm === arm && result.streams === streams).map((result) => result.tokensPerSecond);
    const autoArm = gammaArms.find((arm) => gammaOfArm(arm).startsWith("auto"));
    const fixedArms = gammaArms.filter((arm) => arm !== autoArm);
    const lines = [
        `| streams | ${gammaArms.map((arm) => `${arm.slice("specgate ".length)} tok/s [95%]`).join(" | ")} | best fixed | auto ÷ best fixed [95%] | auto ≥ 0.97× | auto mean draft length | auto steps without a draft | auto acceptance |`,
        `|---|${gammaArms.map(() => "---|").join("")}---|---|---|---|---|---|`
    ];
    const rows = streamLevels.map((streams) => {
        const intervals = gammaArms.map((arm) => medianInterval(rates(arm, streams)));
        const best = fixedArms.reduce<ArmName | undefined>(
            (chosen, arm) => (chosen === undefined || median(rates(arm, streams)) > median(rates(chosen, streams)) ? arm : chosen),
            undefined
        );
        const ratio =
            autoArm !== undefined && best !== undefined
                ? medianInterval(pairedRoundRatios(roundResults, autoArm, best, streams))
                : {estimate: Number.NaN, low: Number.NaN, high: Number.NaN};
        const decided = goalVerdict(ratio, 0.97);
        const verdict = decided === null ? "–" : {met: "yes", missed: "**no**", undecided: "undecided (interval spans 0.97)"}[decided];
        const auto = summaries.find((summary) => summary.arm === autoArm && summary.streams === streams);
        lines.push(
            `| ${streams} | ${intervals.map((interval) => formatInterval(interval, 1)).join(" | ")} | ${best?.slice("specgate ".length) ?? "–"} | ${formatInterval(ratio, 3)} | ${verdict} | ` +
                `${fixed(auto?.meanDraftLength, 2)} | ${fixed(100 * (auto?.skippedShare ?? Number.NaN), 1)}% | ${fixed(auto?.acceptance, 2)} |`
        );
        return {
            streams,
            arms: Object.fromEntries(gammaArms.map((arm, index) => [arm, intervals[index]])),
            bestFixed: best,
            autoOverBest: ratio,
            verdict
        };
    });
    lines.push(
        "",
        `Intervals: 95% percentile bootstrap over rounds (bench/speedIntervals.ts); auto ÷ best fixed is the median of the per-round ratios (rounds paired). ${rounds} round(s) per arm and level. ` +
            "With fewer than about 5 rounds the intervals are wide and the target stays undecided."
    );
    return {lines, rows};
}

// ---------------------------------------------------------------------------------------------
// Run

async function main(): Promise<void> {
    for (const path of [benchCase.target, benchCase.draft])
        if (!existsSync(path))
            throw new Error(`missing ${path} (the d768 pair: npm run bench:native -- --cases d768 writes it, or specgate fixtures)`);
    if (armNames.some(isLlamaArm) && !existsSync(llamaServerBinary))
        throw new Error(`missing ${llamaServerBinary}: npm run build:baselines`);
    await mkdir(logDirectory, {recursive: true});
    const startedAt = new Date();
    const loadAtStart = loadavg();
    const commit = (() => {
        try {
            return readFileSync(join(root, ".git/HEAD"), "utf8").trim().startsWith("ref:")
                ? readFileSync(join(root, ".git", readFileSync(join(root, ".git/HEAD"), "utf8").trim().slice(5)), "utf8").trim()
                : readFileSync(join(root, ".git/HEAD"), "utf8").trim();
        } catch {
            return "unknown";
        }
    })();
    log(
        `${benchCase.label}: arms ${armNames.join(",")}, streams ${streamLevels.join(",")}, ${rounds} round(s), ${streamLevels.map(requestsOf).join(",")} requests/client, max_tokens ${maxTokens}, γ=${gamma}, T=${temperature}, ${threads} thread(s), context ${contextPerSlot}/slot; load ${loadAtStart.map((x) => x.toFixed(2)).join(" ")}`
    );
    const records: RequestRecord[] = [];
    const roundResults: RoundResult[] = [];
    const errors: string[] = [];
    const commands: Record<string, string> = {};
    /** What each llama-server arm chose at each level, from its log: `${arm} ×${streams}` → configuration. */
    const llamaServerConfigs: Record<string, LlamaServerConfig> = {};
    for (const streams of streamLevels) {
        const servers: ServerProcess[] = [];
        try {
            for (const arm of armNames) {
                const server = await ServerProcess.start(arm, streams);
                servers.push(server);
                commands[`${arm} ×${streams}`] = server.command;
                if (isLlamaArm(arm)) {
                    const config = server.llamaServerConfig();
                    llamaServerConfigs[`${arm} ×${streams}`] = config;
                    log(`${arm} ×${streams}: ${describeConfig(config)}`);
                }
                await warmUp(server, streams);
            }
            for (let round = 0; round < rounds; round++) {
                const order = round % 2 === 0 ? servers : [...servers].reverse();
                for (const server of order) {
                    const result = await runRound(server, streams, round, records, errors);
                    roundResults.push(result);
                    log(
                        `${server.arm} ×${streams} round ${round + 1}/${rounds}: ${result.tokens} tokens in ${fixed(result.wallSeconds, 2)} s = ${fixed(result.tokensPerSecond)} tok/s, server ${fixed(result.serverCores, 2)} cores` +
                            `${result.errors > 0 ? `, ${result.errors} errors` : ""} (load ${fixed(result.loadAverage, 2)})`
                    );
                }
            }
        } finally {
            for (const server of servers) await server.stop();
        }
    }

    // Summaries.
    const summarize = (arm: ArmName, streams: number) => {
        const rows = records.filter((record) => record.arm === arm && record.streams === streams);
        const withText = rows.filter((record) => record.events > 0);
        const perRound = roundResults.filter((result) => result.arm === arm && result.streams === streams);
        const drafted = rows.reduce((sum, record) => sum + (record.drafted ?? 0), 0);
        const accepted = rows.reduce((sum, record) => sum + (record.accepted ?? 0), 0);
        return {
            arm,
            streams,
            requests: rows.length,
            errors: perRound.reduce((sum, result) => sum + result.errors, 0),
            tokensPerSecond: median(perRound.map((result) => result.tokensPerSecond)),
            tokensPerSecondRounds: perRound.map((result) => result.tokensPerSecond),
            serverCores: median(perRound.map((result) => result.serverCores)),
            targetDecodesPerRound: median(perRound.map((result) => result.targetDecodeCalls).filter(Number.isFinite)),
            targetTokensPerDecode:
                perRound.reduce((sum, result) => sum + result.targetDecodeTokens, 0) /
                Math.max(
                    1,
                    perRound.reduce((sum, result) => sum + result.targetDecodeCalls, 0)
                ),
            meanTokensPerRequest: rows.reduce((sum, record) => sum + record.tokens, 0) / Math.max(1, rows.length),
            tokensPerEvent:
                rows.reduce((sum, record) => sum + record.tokens, 0) /
                Math.max(
                    1,
                    rows.reduce((sum, record) => sum + record.events, 0)
                ),
            // A request that ends before any text (EOS first) has no first token: it is left out of TTFT.
            withoutText: rows.filter((record) => record.events === 0).length,
            retries: rows.reduce((sum, record) => sum + record.retries, 0),
            ttftP50: percentile(
                withText.map((record) => record.ttftMs),
                0.5
            ),
            ttftP99: percentile(
                withText.map((record) => record.ttftMs),
                0.99
            ),
            itlP50: percentile(
                rows.flatMap((record) => record.itlMs),
                0.5
            ),
            itlP99: percentile(
                rows.flatMap((record) => record.itlMs),
                0.99
            ),
            tpotP50: percentile(rows.map((record) => record.tpotMs).filter(Number.isFinite), 0.5),
            tpotP99: percentile(rows.map((record) => record.tpotMs).filter(Number.isFinite), 0.99),
            acceptance: drafted > 0 ? accepted / drafted : Number.NaN,
            ...draftLengthSummary(rows)
        };
    };
    type Summary = ReturnType<typeof summarize>;
    const summaries = streamLevels.flatMap((streams) => armNames.map((arm) => summarize(arm, streams)));
    const find = (arm: ArmName, streams: number): Summary | undefined =>
        summaries.find((row) => row.arm === arm && row.streams === streams);
    const lowest = Math.min(...streamLevels);
    const highest = Math.max(...streamLevels);
    const scaling = Object.fromEntries(
        armNames.map((arm) => [
            arm,
            (find(arm, highest)?.tokensPerSecond ?? Number.NaN) / (find(arm, lowest)?.tokensPerSecond ?? Number.NaN)
        ])
    );
    const ratioOf = (a: number | undefined, b: number | undefined): number => (a ?? Number.NaN) / (b ?? Number.NaN);

    /** specgate beside one llama-server arm: its table, paired throughput ratios, targets and token-count check. */
    const compare = (other: LlamaArm) => {
        const lines: string[] = [];
        const pair = (a: number | undefined, b: number | undefined, digits = 1) => `${fixed(a, digits)} / ${fixed(b, digits)}`;
        lines.push(
            `| streams | specgate tok/s | ${other} tok/s | ratio | TTFT p50 ms (sg / ls) | TTFT p99 ms (sg / ls) | p99 TTFT ratio | ITL p50 ms (sg / ls) | ITL p99 ms (sg / ls) | TPOT p50 ms (sg / ls) | tokens/request (sg / ls) | tokens/event (sg / ls) | acceptance (sg / ls) | server cores busy (sg / ls) | target decodes per round (sg / ls) | target tokens per decode (sg / ls) | errors (sg / ls) |`
        );
        lines.push("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        for (const streams of streamLevels) {
            const sg = find("specgate", streams);
            const ls = find(other, streams);
            lines.push(
                `| ${streams} | ${fixed(sg?.tokensPerSecond)} | ${fixed(ls?.tokensPerSecond)} | **${fixed(ratioOf(sg?.tokensPerSecond, ls?.tokensPerSecond), 3)}** | ` +
                    `${pair(sg?.ttftP50, ls?.ttftP50)} | ${pair(sg?.ttftP99, ls?.ttftP99)} | **${fixed(ratioOf(sg?.ttftP99, ls?.ttftP99), 3)}** | ` +
                    `${pair(sg?.itlP50, ls?.itlP50, 2)} | ${pair(sg?.itlP99, ls?.itlP99, 2)} | ${pair(sg?.tpotP50, ls?.tpotP50, 2)} | ${pair(sg?.meanTokensPerRequest, ls?.meanTokensPerRequest)} | ` +
                    `${pair(sg?.tokensPerEvent, ls?.tokensPerEvent, 2)} | ${pair(sg?.acceptance, ls?.acceptance, 2)} | ${pair(sg?.serverCores, ls?.serverCores, 2)} | ${pair(sg?.targetDecodesPerRound, ls?.targetDecodesPerRound, 0)} | ${pair(sg?.targetTokensPerDecode, ls?.targetTokensPerDecode)} | ${sg?.errors ?? "–"} / ${ls?.errors ?? "–"} |`
            );
        }
        // The rounds pair up (round r of each arm ran close together): the median of the per-round
        // ratios is the figure least moved by load that changed between rounds.
        const pairedRatioSamples = Object.fromEntries(
            streamLevels.map((streams) => [streams, pairedRoundRatios(roundResults, "specgate", other, streams)])
        ) as Record<number, number[]>;
        const pairedRatios = Object.fromEntries(streamLevels.map((streams) => [streams, median(pairedRatioSamples[streams])])) as Record<
            number,
            number
        >;
        // 95% bootstrap interval of the median paired ratio: a target is met only when it clears 1.0× (bench/speedIntervals.ts).
        const pairedIntervals = Object.fromEntries(
            streamLevels.map((streams) => [streams, medianInterval(pairedRatioSamples[streams])])
        ) as Record<number, ReturnType<typeof medianInterval>>;
        lines.push(
            "",
            `Throughput ratio specgate / ${other}, median of the per-round ratios (round r of the arms ran back to back): ${streamLevels.map((streams) => `${streams} stream${streams > 1 ? "s" : ""} ${formatInterval(pairedIntervals[streams], 3)}`).join(", ")} (95% bootstrap intervals over ${rounds} round(s); fewer than 5 rounds leave them wide).`
        );
        const configs = streamLevels.flatMap((streams) => {
            const config = llamaServerConfigs[`${other} ×${streams}`];
            return config === undefined ? [] : [`×${streams}: ${describeConfig(config)}`];
        });
        if (configs.length > 0) lines.push("", `${other} chose (its log): ${configs.join("; ")}.`);
        // null: undecided, the interval holds 1.0× (or there is none).
        const targets: Array<{target: string; measured: string; met: boolean | null}> = [];
        for (const streams of streamLevels) {
            const ratio = ratioOf(find("specgate", streams)?.tokensPerSecond, find(other, streams)?.tokensPerSecond);
            const interval = pairedIntervals[streams];
            targets.push({
                target: `throughput at ${streams} stream${streams > 1 ? "s" : ""} ≥ 1.0× ${other}'s`,
                measured: `${fixed(ratio, 3)}× (paired rounds ${formatInterval(interval, 3)})`,
                met: interval.low >= 1 ? true : interval.high < 1 ? false : null
            });
        }
        for (const streams of streamLevels) {
            const ratio = ratioOf(find("specgate", streams)?.ttftP99, find(other, streams)?.ttftP99);
            targets.push({
                target: `p99 TTFT at ${streams} stream${streams > 1 ? "s" : ""} ≤ 1.0× ${other}'s`,
                measured: `${fixed(ratio, 3)}×`,
                met: ratio <= 1
            });
        }
        lines.push("", "| target | measured | met |", "|---|---|---|");
        for (const entry of targets)
            lines.push(
                `| ${entry.target} | ${entry.measured} | ${entry.met === null ? "undecided (the interval holds 1.0×)" : entry.met ? "yes" : "**no**"} |`
            );
        // Same greedy text on both arms: the token counts per prompt and level should agree (llama-server
        // counts a final EOS token in predicted_n, specgate does not: a difference of 1 on a stopped request is that).
        const counts = (arm: ArmName, streams: number, prompt: number) =>
            [
                ...new Set(
                    records
                        .filter((record) => record.arm === arm && record.streams === streams && record.prompt === prompt)
                        .map((record) => record.tokens)
                )
            ].sort((a, b) => a - b);
        const mismatched: string[] = [];
        for (const streams of streamLevels)
            for (let prompt = 0; prompt < prompts.length; prompt++) {
                const sg = counts("specgate", streams, prompt);
                const ls = counts(other, streams, prompt);
                if (sg.length > 0 && ls.length > 0 && (sg.length !== 1 || ls.length !== 1 || Math.abs(sg[0] - ls[0]) > 1))
                    mismatched.push(`×${streams} prompt ${prompt}: specgate ${sg.join("/")}, ${other} ${ls.join("/")}`);
            }
        if (mismatched.length > 0)
            lines.push(
                "",
                `Generated tokens per request differ between specgate and ${other} (not the same greedy text, or not the same on every request): ${mismatched.join("; ")}.`
            );
        return {arm: other, lines, pairedRatios, targets, mismatched};
    };
    const comparisons = armNames.includes("specgate") ? llamaArms.filter((arm) => armNames.includes(arm)).map(compare) : [];

    const lines: string[] = [];
    const machine = `${cpus().length}-core ${cpus()[0]?.model ?? "CPU"}, ${process.platform}, Node ${process.version}`;
    lines.push(`Case: ${benchCase.label}. Machine: ${machine}. Date: ${startedAt.toISOString()}. Commit: ${commit.slice(0, 12)}.`);
    lines.push(
        `Load average (1 min) at start ${fixed(loadAtStart[0], 2)}, at end ${fixed(loadavg()[0], 2)}; per round: ${roundResults.map((result) => fixed(result.loadAverage, 2)).join(", ")}.`
    );
    if (specgateExtraArgs.length > 0) lines.push(`Extra specgate serve flags: \`${specgateExtraArgs.join(" ")}\`.`);
    lines.push(
        `Settings: γ = ${gamma}, T = ${temperature} (greedy; specgate strict), ${threads} thread(s) per model on every arm, prompt caches on (both servers' default), ` +
            `specgate and llama-server: slots = streams and context ${contextPerSlot} per slot; llama-server-defaults: its own slots and context (below its table); ` +
            `${rounds} round(s) per arm and level (arms interleaved: ${armNames.join(", ")}, then reversed), ${streamLevels.map(requestsOf).join(", ")} requests per client (by level), max_tokens ${maxTokens}, EOS not ignored (tokens actually generated are counted).`
    );
    for (const comparison of comparisons) {
        lines.push("", `### specgate vs ${comparison.arm} (ls = ${comparison.arm})`, "");
        lines.push(...comparison.lines);
    }
    if (comparisons.length === 0) {
        // One arm only (or no specgate): its figures alone.
        lines.push(
            "",
            "| arm | streams | tok/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | TPOT p50 ms | tokens/request | errors |",
            "|---|---|---|---|---|---|---|---|---|"
        );
        for (const row of summaries)
            lines.push(
                `| ${row.arm} | ${row.streams} | ${fixed(row.tokensPerSecond)} | ${fixed(row.ttftP50)} | ${fixed(row.ttftP99)} | ${fixed(row.itlP50, 2)} | ${fixed(row.tpotP50, 2)} | ${fixed(row.meanTokensPerRequest)} | ${row.errors} |`
            );
    }
    const gammaComparison = gammaArms.length > 0 ? compareGammaArms(roundResults, summaries) : undefined;
    if (gammaComparison !== undefined) lines.push("", "### γ arms: --gamma auto beside fixed γ", "", ...gammaComparison.lines);
    const globalTargets: Array<{target: string; measured: string; met: boolean}> = [];
    if (highest !== lowest) {
        lines.push("");
        lines.push(
            `Scaling, throughput at ${highest} streams / ${lowest}: ${armNames.map((arm) => `${arm} ${fixed(scaling[arm], 2)}×`).join(", ")}.`
        );
    }
    if (armNames.includes("specgate") && lowest === 1 && highest === 16)
        globalTargets.push({
            target: "specgate: 16 streams ≥ 1.5× the throughput of 1 stream",
            measured: `${fixed(scaling.specgate, 2)}×`,
            met: scaling.specgate >= 1.5
        });
    if (globalTargets.length > 0) {
        lines.push("", "| target | measured | met |", "|---|---|---|");
        for (const entry of globalTargets) lines.push(`| ${entry.target} | ${entry.measured} | ${entry.met ? "yes" : "**no**"} |`);
    }
    const empty = summaries.filter((row) => row.withoutText > 0);
    if (empty.length > 0)
        lines.push(
            "",
            `Requests that ended before any text (EOS first; left out of TTFT): ${empty.map((row) => `${row.arm} ×${row.streams}: ${row.withoutText}`).join(", ")}.`
        );
    if (errors.length > 0) lines.push("", `Errors: ${errors.length}; first: ${errors[0]}`);
    const retried = summaries.filter((row) => row.retries > 0);
    if (retried.length > 0)
        lines.push(
            "",
            `Connection-level resends (the request failed before any response and was sent again; its TTFT includes that): ${retried.map((row) => `${row.arm} ×${row.streams}: ${row.retries}`).join(", ")}; ` +
                `first cause: ${records.find((record) => record.retries > 0)?.retryCauses[0] ?? "?"}.`
        );
    lines.push("");
    lines.push("Commands:");
    lines.push("");
    for (const [key, command] of Object.entries(commands)) lines.push(`- ${key}: \`${command}\``);
    process.stdout.write(`${lines.join("\n")}\n`);

    const jsonPath = values.json ?? join(outDirectory, `result-${startedAt.toISOString().replace(/[:.]/g, "-")}.json`);
    await writeJsonResult(jsonPath, {
        date: startedAt.toISOString(),
        finished: new Date().toISOString(),
        machine,
        commit,
        loadAverage: {start: loadAtStart, end: loadavg()},
        case: benchCase,
        settings: {
            specgateExtraArgs,
            streams: streamLevels,
            rounds,
            requestsPerClient: streamLevels.map(requestsOf),
            maxTokens,
            gamma,
            gammas: gammaArms.map(gammaOfArm),
            threads,
            contextPerSlot,
            temperature,
            arms: armNames,
            prompts
        },
        commands,
        llamaServerConfigs,
        summaries,
        scaling,
        targets: [...comparisons.flatMap((comparison) => comparison.targets), ...globalTargets],
        gammaArms: gammaComparison?.rows,
        comparisons: Object.fromEntries(
            comparisons.map((comparison) => [
                comparison.arm,
                {
                    pairedThroughputRatios: comparison.pairedRatios,
                    targets: comparison.targets,
                    mismatchedTokenCounts: comparison.mismatched
                }
            ])
        ),
        rounds_: roundResults,
        errors,
        requests: records
    });
    log(`wrote ${jsonPath}`);
}

await main();
