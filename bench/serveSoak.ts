/**
 * Soak mode of the serve bench: `specgate serve` (its own process, its default --cache-ram) under
 * N minutes of varied traffic — prompts that vary (numbers redrawn in the family prompts, some
 * repeated so the prompt cache saves and restores states), completions and chat, streamed or not,
 * drafter specs drawn per request (default, off, model at several γ, ngram and suffix with random
 * parameters, chains), response formats (none, json_object, json_schema), two API keys, and a few
 * requests the server must refuse (17 stop strings). Every few seconds it reads the server's RSS and
 * V8 heap (process_resident_memory_bytes, nodejs_heap_size_used_bytes), its saved prompt states,
 * suffix cache nodes and the number of /metrics series, with the operator's metrics key.
 *
 * Reported: RSS and heap first / last / max and their least-squares slope (MiB per minute) over the
 * run after its first fifth (warm-up), the same for the other series; and whether /metrics' counters
 * are exact: completed requests, refusals by status, generated tokens and each key's completed
 * requests must equal what the clients received, with no failure and no 5xx.
 *
 *   npm run bench:soak                                           # family pair, 10 minutes, 4 clients
 *   npx tsx bench/serveSoak.ts --minutes 0.5 --sample-seconds 2  # smoke run
 *   … --target T.gguf --draft D.gguf --clients 8 --serve-args="--cache-ram 64" --json out.json
 *
 * Exits 1 when the counters are not exact or a request got a 5xx. JSON (settings, samples, counts):
 * --json FILE, default .specgate/bench-serve/soak-<date>.json; the server's log beside it.
 */
import type {ChildProcess} from "node:child_process";
import {readFileSync} from "node:fs";
import {mkdir} from "node:fs/promises";
import {cpus} from "node:os";
import {dirname, join, resolve} from "node:path";
import {fileURLToPath} from "node:url";
import {parseArgs} from "node:util";
import {Random} from "../src/random/Random.js";
import {freePort} from "../src/serve/testing/freePort.js";
import {parsePrometheusText, sumSamples, type PrometheusSample} from "../src/serve/testing/parsePrometheusText.js";
import {commandLine, fixed, log, sseData, startServerProcess, stopServerProcess, writeJsonResult} from "./benchUtilities.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const {values} = parseArgs({
    options: {
        target: {type: "string", default: join(root, "models/target/model.gguf")},
        draft: {type: "string", default: join(root, "models/draft/model.gguf")},
        minutes: {type: "string", default: "10"},
        clients: {type: "string", default: "4"},
        "sample-seconds": {type: "string", default: "5"},
        "max-tokens": {type: "string", default: "32"},
        threads: {type: "string", default: "1"},
        seed: {type: "string", default: "1"},
        /** Extra `specgate serve` flags, space-separated (the = is needed: --serve-args="--cache-ram 64"). */
        "serve-args": {type: "string", default: ""},
        json: {type: "string"}
    }
});
const minutes = Number(values.minutes);
const clients = Number(values.clients);
const sampleSeconds = Number(values["sample-seconds"]);
const maxTokens = Number(values["max-tokens"]);
const apiKeys = ["soak-key-a", "soak-key-b"];
const metricsKey = "soak-metrics-key";
const familyPrompts = readFileSync(join(root, "examples/family-prompts.jsonl"), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => (JSON.parse(line) as {prompt: string}).prompt);

// ---------------------------------------------------------------------------------------------
// Traffic

interface PlannedRequest {
    readonly key: number;
    readonly path: "/v1/completions" | "/v1/chat/completions";
    readonly body: Record<string, unknown>;
    readonly stream: boolean;
}

const itemSchema = {
    type: "object",
    properties: {name: {type: "string", maxLength: 12}, count: {type: "integer"}},
    required: ["name", "count"],
    additionalProperties: false
};

/** One request of the mix, drawn from `random`; `recent` holds earlier prompts, some of which recur. */
function planRequest(random: Random, recent: string[]): PlannedRequest {
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random.nextDouble() * items.length)];
    const integer = (low: number, high: number): number => low + Math.floor(random.nextDouble() * (high - low + 1));
    const prompt =
        recent.length > 0 && random.nextDouble() < 0.3 ? pick(recent) : pick(familyPrompts).replace(/\d+/g, () => String(integer(1, 99)));
    recent.push(prompt);
    if (recent.length > 64) recent.shift();
    const speculative = pick<unknown>([
        undefined,
        "off",
        {gamma: integer(1, 6)},
        {drafter: `ngram:${integer(1, 3)}:${integer(3, 8)}`},
        {drafter: `suffix:${integer(1, 4)}:${integer(1, 3)}:${integer(8, 48)}:${integer(1000, 200_000)}`},
        {drafter: `ngram:${integer(1, 3)}:${integer(3, 8)}+suffix:2:1:${integer(8, 32)}`},
        {drafter: `suffix:${integer(1, 3)}+model`, gamma: integer(2, 5)}
    ]);
    const format = random.nextDouble();
    const responseFormat =
        format < 0.7
            ? undefined
            : format < 0.85
              ? {type: "json_object"}
              : {type: "json_schema", json_schema: {name: "item", schema: itemSchema, strict: true}};
    const stream = random.nextDouble() < 0.5;
    const chat = random.nextDouble() < 0.4;
    const refused = random.nextDouble() < 0.05;
    const temperature = pick([0, 0, 0.8]);
    const body: Record<string, unknown> = {
        ...(chat ? {messages: [{role: "user", content: prompt}]} : {prompt}),
        max_tokens: maxTokens,
        temperature,
        seed: integer(0, 1_000_000),
        stream,
        ...(stream ? {stream_options: {include_usage: true}} : {}),
        ...(speculative !== undefined ? {speculative} : {}),
        ...(responseFormat !== undefined ? {response_format: responseFormat} : {}),
        ...(refused ? {stop: Array.from({length: 17}, (_, index) => `stop${index}`)} : {})
    };
    return {key: integer(0, apiKeys.length - 1), path: chat ? "/v1/chat/completions" : "/v1/completions", body, stream};
}

/** What the clients received: to check the server's counters against. */
const received = {
    completed: 0,
    byStatus: new Map<number, number>(),
    completionTokens: 0,
    completedByKey: apiKeys.map(() => 0),
    streamErrors: 0
};

async function send(baseUrl: string, request: PlannedRequest): Promise<void> {
    const response = await fetch(`${baseUrl}${request.path}`, {
        method: "POST",
        headers: {"content-type": "application/json", authorization: `Bearer ${apiKeys[request.key]}`},
        body: JSON.stringify(request.body)
    });
    received.byStatus.set(response.status, (received.byStatus.get(response.status) ?? 0) + 1);
    if (response.status !== 200) {
        await response.arrayBuffer();
        return;
    }
    let tokens: number | undefined;
    if (request.stream) {
        for await (const data of sseData(response.body!)) {
            if (data === "[DONE]") break;
            const chunk = JSON.parse(data) as {error?: unknown; usage?: {completion_tokens: number}};
            if (chunk.error !== undefined) {
                received.streamErrors++;
                return;
            }
            if (chunk.usage != null) tokens = chunk.usage.completion_tokens;
        }
    } else {
        tokens = ((await response.json()) as {usage: {completion_tokens: number}}).usage.completion_tokens;
    }
    if (tokens === undefined) throw new Error("a completed reply without usage");
    received.completed++;
    received.completionTokens += tokens;
    received.completedByKey[request.key]++;
}

// ---------------------------------------------------------------------------------------------
// Sampling

interface Sample {
    readonly seconds: number;
    readonly rssMiB: number;
    readonly heapMiB: number;
    readonly savedStatesMiB: number;
    readonly suffixCacheNodes: number;
    readonly series: number;
}

async function scrape(baseUrl: string): Promise<PrometheusSample[]> {
    const response = await fetch(`${baseUrl}/metrics`, {headers: {authorization: `Bearer ${metricsKey}`}});
    if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
    return parsePrometheusText(await response.text());
}

function sampleOf(samples: readonly PrometheusSample[], seconds: number): Sample {
    const mib = (name: string) => sumSamples(samples, name) / 2 ** 20;
    return {
        seconds,
        rssMiB: mib("process_resident_memory_bytes"),
        heapMiB: mib("nodejs_heap_size_used_bytes"),
        savedStatesMiB: mib("prompt_cache_saved_bytes"),
        suffixCacheNodes: sumSamples(samples, "spec_decode_suffix_cache_nodes"),
        series: samples.length
    };
}

/** Least-squares slope of `value` over time, per minute. */
function slopePerMinute(samples: readonly Sample[], value: (sample: Sample) => number): number {
    const n = samples.length;
    if (n < 2) return Number.NaN;
    const meanT = samples.reduce((sum, sample) => sum + sample.seconds, 0) / n;
    const meanV = samples.reduce((sum, sample) => sum + value(sample), 0) / n;
    let covariance = 0;
    let variance = 0;
    for (const sample of samples) {
        covariance += (sample.seconds - meanT) * (value(sample) - meanV);
        variance += (sample.seconds - meanT) ** 2;
    }
    return (covariance / variance) * 60;
}

function summary(samples: readonly Sample[], value: (sample: Sample) => number, digits = 1) {
    const settled = samples.filter((sample) => sample.seconds >= (minutes * 60) / 5);
    const all = samples.map(value);
    return {
        first: all[0],
        last: all[all.length - 1],
        max: Math.max(...all),
        slopePerMinuteAfterWarmUp: slopePerMinute(settled, value),
        text: `${fixed(all[0], digits)} / ${fixed(all[all.length - 1], digits)} / ${fixed(Math.max(...all), digits)} (slope after warm-up ${fixed(slopePerMinute(settled, value), 2)}/min)`
    };
}

// ---------------------------------------------------------------------------------------------
// The run

function counterCheck(samples: readonly PrometheusSample[]) {
    const refused = Object.fromEntries(
        [...received.byStatus]
            .filter(([status]) => status !== 200)
            .map(([status]) => [status, sumSamples(samples, "request_refused_total", {status: String(status)})])
    );
    const server = {
        completed: sumSamples(samples, "request_success_total"),
        failed: sumSamples(samples, "request_failure_total"),
        generationTokens: sumSamples(samples, "generation_tokens_total"),
        refused,
        completedByKey: apiKeys.map((_, index) => sumSamples(samples, "tenant_request_success_total", {tenant: `key-${index}`}))
    };
    const clientSide = {
        completed: received.completed,
        failed: received.streamErrors,
        generationTokens: received.completionTokens,
        refused: Object.fromEntries([...received.byStatus].filter(([status]) => status !== 200)),
        completedByKey: received.completedByKey
    };
    const serverErrors = [...received.byStatus].filter(([status]) => status >= 500).reduce((sum, [, count]) => sum + count, 0);
    const exact = JSON.stringify(server) === JSON.stringify(clientSide) && serverErrors === 0;
    return {exact, server, clients: clientSide, serverErrors};
}

async function main(): Promise<void> {
    const outDirectory = join(root, ".specgate/bench-serve");
    await mkdir(outDirectory, {recursive: true});
    const stamp = new Date().toISOString().replace(/[:.]/g, "-");
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const serveArgs = [
        join(root, "src/cli/main.ts"),
        "serve",
        "--target",
        values.target,
        "--draft",
        values.draft,
        "--port",
        String(port),
        "--threads",
        values.threads,
        "--max-concurrency",
        String(clients),
        ...apiKeys.flatMap((key) => ["--api-key", key]),
        "--metrics-api-key",
        metricsKey,
        ...values["serve-args"].split(" ").filter((part) => part !== "")
    ];
    const logFile = join(outDirectory, `soak-${stamp}.log`);
    log(`starting ${commandLine(["npx", "tsx", ...serveArgs])}`);
    const server: ChildProcess = await startServerProcess(
        "specgate serve",
        join(root, "node_modules/.bin/tsx"),
        serveArgs,
        logFile,
        baseUrl
    );
    const samples: Sample[] = [];
    const started = performance.now();
    const elapsedSeconds = () => (performance.now() - started) / 1000;
    let report: ReturnType<typeof counterCheck> | undefined;
    try {
        samples.push(sampleOf(await scrape(baseUrl), 0));
        // A failed scrape fails the run once the clients are done, so the finally below still stops the
        // server (left unhandled, the rejection would end the process with the server running).
        const scrapeFailures: unknown[] = [];
        const sampler = setInterval(() => {
            const at = Math.round(elapsedSeconds());
            scrape(baseUrl).then(
                (scraped) => samples.push(sampleOf(scraped, at)),
                (error: unknown) => scrapeFailures.push(error)
            );
        }, sampleSeconds * 1000);
        const deadline = started + minutes * 60_000;
        let sent = 0;
        await Promise.all(
            Array.from({length: clients}, async (_, client) => {
                const random = new Random(Number(values.seed) * 1000 + client);
                const recent: string[] = [];
                while (performance.now() < deadline) {
                    await send(baseUrl, planRequest(random, recent));
                    if (++sent % 200 === 0) log(`${sent} requests, ${fixed(elapsedSeconds(), 0)} s`);
                }
            })
        );
        clearInterval(sampler);
        if (scrapeFailures.length > 0) throw scrapeFailures[0];
        const final = await scrape(baseUrl);
        samples.push(sampleOf(final, Math.round(elapsedSeconds())));
        report = counterCheck(final);
    } finally {
        await stopServerProcess(server);
    }
    if (report === undefined) throw new Error("the run ended without a final scrape");
    samples.sort((a, b) => a.seconds - b.seconds);
    const requests = [...received.byStatus.values()].reduce((sum, count) => sum + count, 0);
    const memory = {
        rssMiB: summary(samples, (sample) => sample.rssMiB),
        heapMiB: summary(samples, (sample) => sample.heapMiB),
        savedStatesMiB: summary(samples, (sample) => sample.savedStatesMiB, 2),
        suffixCacheNodes: summary(samples, (sample) => sample.suffixCacheNodes, 0),
        series: summary(samples, (sample) => sample.series, 0)
    };
    const lines = [
        `specgate serve soak: ${minutes} min, ${clients} clients, ${requests} requests (${[...received.byStatus].map(([status, count]) => `${count}× ${status}`).join(", ")}), ` +
            `${received.completionTokens} tokens generated; ${cpus()[0]?.model ?? "unknown CPU"}, ${new Date().toISOString().slice(0, 10)}`,
        `RSS MiB first / last / max: ${memory.rssMiB.text}`,
        `V8 heap used MiB first / last / max: ${memory.heapMiB.text}`,
        `saved prompt states MiB: ${memory.savedStatesMiB.text}`,
        `suffix cache nodes: ${memory.suffixCacheNodes.text}`,
        `/metrics samples (series): ${memory.series.text}`,
        `counters: ${report.exact ? "exact" : "MISMATCH"} (server ${JSON.stringify(report.server)}; clients ${JSON.stringify(report.clients)}; 5xx ${report.serverErrors})`
    ];
    process.stdout.write(`${lines.join("\n")}\n`);
    const jsonPath = values.json ?? join(outDirectory, `soak-${stamp}.json`);
    await writeJsonResult(jsonPath, {
        settings: {...values, command: commandLine(["npx", "tsx", ...serveArgs])},
        memory,
        report,
        samples
    });
    log(`JSON: ${jsonPath}; server log: ${logFile}`);
    if (!report.exact) process.exitCode = 1;
}

await main();
