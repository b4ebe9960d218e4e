/**
 * Load on `specgate serve` over loopback: 1, 4, 16 and 32 concurrent streaming completions, for the
 * speculative arm and the target-only arm in the same run (the arms alternate per level, so drift
 * of a shared machine hits both). Reported per arm and level: completed requests, errors (goal 0),
 * throughput in generated tokens per second, p50/p99 time to first token and p50/p99 per-token
 * latency ((last − first token) / (tokens − 1) per request); and the process RSS before and after
 * the whole run (goal: flat). The server runs in this process, so RSS includes the load client.
 *
 *   npx tsx bench/serveLoadBench.ts                              # fixture pair, 120 s per arm and level
 *   npx tsx bench/serveLoadBench.ts --target T.gguf --draft D.gguf --policy fuzzy:js:0.4 --gamma 4
 *   npx tsx bench/serveLoadBench.ts --seconds 2 --levels 1,4     # smoke run
 *   … --json out.json                                            # also write the results as JSON
 *   … --drafter suffix --temperature 1 --levels 32 --arms speculative   # the suffix cache under load
 *   … --backend node-llama-cpp | --batching off                  # without continuous batching
 *   … --draft head.gguf --drafter eagle3 --head-batching off      # an EAGLE-3 head: a head context per request, not one shared by the slots
 *
 * At the end the server's /metrics are checked against what the clients received: completed
 * requests and generated tokens must agree exactly, and no request may have failed with an error
 * or been answered 5xx.
 *
 * The process RSS and the suffix caches' node count are sampled every 10 s (the cache's memory bound
 * under load: outputs at temperature 1 are all different, so the cache fills to its bound and stays).
 * For memory over a long run of varied traffic (the server in its own process, its RSS and heap
 * slope, exact counters) use the soak mode, bench/serveSoak.ts (`npm run bench:soak`).
 *
 * Without --target/--draft it writes the random-weight fixture pair (src/gguf/randomLlamaModel.ts).
 */
import {mkdtemp, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {parseArgs} from "node:util";
import {Eagle3HeadBackend, isEagle3Head} from "../src/backend/Eagle3HeadBackend.js";
import {loadModelBackend, parseBackendChoice} from "../src/backend/loadModelBackend.js";
import type {BatchStatistics} from "../src/backend/ModelBackend.js";
import {writeRandomLlamaPair} from "../src/gguf/randomLlamaModel.js";
import {parseDrafterSpec} from "../src/engine/drafters/parseDrafterSpec.js";
import {parsePolicySpec} from "../src/policies/parsePolicySpec.js";
import {startServeServer} from "../src/serve/startServeServer.js";
import {readSseData} from "../src/serve/testing/readSseData.js";
import {parsePrometheusText, sumSamples} from "../src/serve/testing/parsePrometheusText.js";

const {values} = parseArgs({
    options: {
        target: {type: "string"},
        draft: {type: "string"},
        policy: {type: "string", default: "strict"},
        drafter: {type: "string"},
        arms: {type: "string", default: "speculative,target-only"},
        gamma: {type: "string", default: "4"},
        levels: {type: "string", default: "1,4,16,32"},
        seconds: {type: "string", default: "120"},
        "max-tokens": {type: "string", default: "64"},
        temperature: {type: "string", default: "0"},
        threads: {type: "string", default: "1"},
        backend: {type: "string", default: "auto"},
        batching: {type: "string", default: "on"},
        "head-batching": {type: "string", default: "on"},
        json: {type: "string"}
    }
});
const levels = values.levels.split(",").map(Number);
const seconds = Number(values.seconds);
const maxTokens = Number(values["max-tokens"]);
const prompts = ["Once upon a time", "The answer is", "def fibonacci(n):", "東京は", "In 1905, Einstein", "Dear team,"];

interface RequestSample {
    readonly timeToFirstToken: number;
    readonly perTokenLatency: number | undefined;
    readonly tokens: number;
}

function percentile(sorted: readonly number[], fraction: number): number {
    if (sorted.length === 0) return NaN;
    return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))];
}

/** One streaming completion; returns its timings, or throws on any HTTP or stream error. */
async function streamOnce(baseUrl: string, prompt: string, speculative: unknown): Promise<RequestSample> {
    const started = performance.now();
    const response = await fetch(`${baseUrl}/v1/completions`, {
        method: "POST",
        headers: {"content-type": "application/json"},
        body: JSON.stringify({
            prompt,
            max_tokens: maxTokens,
            temperature: Number(values.temperature),
            stream: true,
            stream_options: {include_usage: true},
            ...(speculative === undefined ? {} : {speculative})
        })
    });
    if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
    let first: number | undefined;
    let last = started;
    let tokens = 0;
    for await (const data of readSseData(response.body!)) {
        if (data === "[DONE]") break;
        const chunk = JSON.parse(data) as {error?: unknown; choices: Array<{text?: string}>; usage?: {completion_tokens: number}};
        if (chunk.error !== undefined) throw new Error(`stream error: ${JSON.stringify(chunk.error)}`);
        if ((chunk.choices[0]?.text ?? "") !== "") {
            first ??= performance.now();
            last = performance.now();
        }
        if (chunk.usage !== undefined) tokens = chunk.usage.completion_tokens;
    }
    const firstToken = first ?? last;
    return {timeToFirstToken: firstToken - started, perTokenLatency: tokens > 1 ? (last - firstToken) / (tokens - 1) : undefined, tokens};
}

/** What every client received over the whole run, to check the server's counters against. */
const received = {requests: 0, tokens: 0, errors: 0};

async function runLevel(baseUrl: string, concurrency: number, speculative: unknown) {
    const samples: RequestSample[] = [];
    const errors: string[] = [];
    const started = performance.now();
    const cpuStarted = process.cpuUsage();
    const deadline = started + seconds * 1000;
    await Promise.all(
        Array.from({length: concurrency}, async (_value, worker) => {
            for (let index = worker; performance.now() < deadline; index += concurrency) {
                try {
                    samples.push(await streamOnce(baseUrl, prompts[index % prompts.length], speculative));
                } catch (error) {
                    errors.push((error as Error).message);
                }
            }
        })
    );
    const elapsed = (performance.now() - started) / 1000;
    const ttft = samples.map((sample) => sample.timeToFirstToken).sort((a, b) => a - b);
    const perToken = samples
        .flatMap((sample) => (sample.perTokenLatency === undefined ? [] : [sample.perTokenLatency]))
        .sort((a, b) => a - b);
    const tokens = samples.reduce((sum, sample) => sum + sample.tokens, 0);
    received.requests += samples.length;
    received.tokens += tokens;
    received.errors += errors.length;
    return {
        concurrency,
        requests: samples.length,
        errors: errors.length,
        firstError: errors[0],
        tokensPerSecond: tokens / elapsed,
        // The process's CPU time (server and clients, every thread) per generated token: on a shared machine it moves far less than wall time.
        cpuMsPerToken: (() => {
            const used = process.cpuUsage(cpuStarted);
            return (used.user + used.system) / 1000 / Math.max(1, tokens);
        })(),
        ttftP50Ms: percentile(ttft, 0.5),
        ttftP99Ms: percentile(ttft, 0.99),
        perTokenP50Ms: percentile(perToken, 0.5),
        perTokenP99Ms: percentile(perToken, 0.99)
    };
}

/** Prints whether the server's counters equal what the clients received, and any 5xx or error it counted. */
async function checkCounters(baseUrl: string): Promise<void> {
    const samples = parsePrometheusText(await (await fetch(`${baseUrl}/metrics`)).text());
    const counted = {
        requests: sumSamples(samples, "request_success_total"),
        tokens: sumSamples(samples, "generation_tokens_total"),
        failures: sumSamples(samples, "request_failure_total"),
        serverErrors: samples
            .filter((entry) => entry.name === "request_refused_total" && Number(entry.labels.status) >= 500)
            .reduce((sum, entry) => sum + entry.value, 0)
    };
    const exact =
        counted.requests === received.requests &&
        counted.tokens === received.tokens &&
        counted.failures === received.errors &&
        counted.serverErrors === 0;
    process.stdout.write(
        `counters: ${exact ? "exact" : "MISMATCH"} (server: ${JSON.stringify(counted)}; clients: ${JSON.stringify(received)})\n`
    );
}

async function main(): Promise<void> {
    let directory: string | undefined;
    let targetPath = values.target;
    let draftPath = values.draft;
    if (targetPath === undefined || draftPath === undefined) {
        directory = await mkdtemp(join(tmpdir(), "specgate-serve-bench-"));
        const pair = await writeRandomLlamaPair({directory, seed: 11});
        targetPath = pair.targetPath;
        draftPath = pair.draftPath;
    }
    // What `specgate serve` loads: continuous batching over as many sequences as the largest level.
    const loadOptions = {
        threads: Number(values.threads),
        backend: parseBackendChoice(values.backend),
        inlineBelowMilliseconds: 1,
        batchedSequences: values.batching === "on" ? Math.max(...levels) : 1
    };
    const target = await loadModelBackend(targetPath, loadOptions);
    // An EAGLE-3 head: its slots' drafts in shared decodes on one head context (on), or a head context per request (off).
    const draft = isEagle3Head(draftPath)
        ? await Eagle3HeadBackend.load(draftPath, {...loadOptions, batchedHeads: values["head-batching"] !== "off"})
        : await loadModelBackend(draftPath, loadOptions);
    const server = await startServeServer({
        target,
        draft,
        modelName: "bench",
        modelFiles: {target: targetPath, draft: draftPath},
        speculative: {
            policy: parsePolicySpec(values.policy),
            gamma: Number(values.gamma),
            ...(values.drafter !== undefined ? {drafter: parseDrafterSpec(values.drafter)} : {})
        },
        port: 0,
        maxConcurrency: Math.max(...levels),
        maxQueue: 4 * Math.max(...levels)
    });
    const rssBefore = process.memoryUsage().rss;
    const results: Array<Record<string, unknown>> = [];
    const samples: Array<{seconds: number; rssMiB: number; heapMiB: number; suffixCacheNodes: number}> = [];
    const sampleStart = performance.now();
    const sample = () =>
        samples.push({
            seconds: Math.round((performance.now() - sampleStart) / 1000),
            rssMiB: process.memoryUsage().rss / 2 ** 20,
            heapMiB: process.memoryUsage().heapUsed / 2 ** 20,
            suffixCacheNodes: server.serveApp.state.tenants.suffixCacheNodes
        });
    const sampler = setInterval(sample, 10_000);
    try {
        const arms = (
            [
                ["speculative", undefined],
                ["target-only", "off"]
            ] as Array<[string, unknown]>
        ).filter(([arm]) => values.arms.split(",").includes(arm));
        process.stdout.write(
            `${values.drafter !== undefined ? `drafter ${values.drafter}${isEagle3Head(draftPath) ? ` (head batching ${values["head-batching"]})` : ""}, ` : ""}policy ${values.policy}, γ=${values.gamma}, ${seconds} s per arm and level, max_tokens ${maxTokens}, temperature ${values.temperature}\n`
        );
        process.stdout.write(
            "| arm | streams | requests | errors | tok/s | TTFT p50 ms | TTFT p99 ms | per-token p50 ms | per-token p99 ms |\n|---|---|---|---|---|---|---|---|---|\n"
        );
        for (const concurrency of levels) {
            for (const [arm, speculative] of arms) {
                const before = {target: {...target.batchStatistics}, draft: {...draft.batchStatistics}};
                const result = {arm, ...(await runLevel(server.url, concurrency, speculative))};
                results.push(result);
                const perStep = (now: BatchStatistics | undefined, then: Partial<BatchStatistics>) =>
                    now === undefined
                        ? "–"
                        : ((now.submissions - (then.submissions ?? 0)) / Math.max(1, now.steps - (then.steps ?? 0))).toFixed(2);
                const format = (value: number) => (Number.isFinite(value) ? value.toFixed(1) : "–");
                process.stdout.write(
                    `| ${arm} | ${concurrency} | ${result.requests} | ${result.errors} | ${format(result.tokensPerSecond)} | ` +
                        `${format(result.ttftP50Ms)} | ${format(result.ttftP99Ms)} | ${format(result.perTokenP50Ms)} | ${format(result.perTokenP99Ms)} |\n`
                );
                if (result.firstError !== undefined) process.stdout.write(`  first error: ${result.firstError}\n`);
                if (target.batchStatistics !== undefined)
                    process.stdout.write(
                        `  sequences per target step ${perStep(target.batchStatistics, before.target)}, per draft step (an EAGLE-3 head: per head call) ${perStep(draft.batchStatistics, before.draft)}, CPU ms per token ${result.cpuMsPerToken.toFixed(3)}\n`
                    );
            }
        }
        await checkCounters(server.url);
    } finally {
        clearInterval(sampler);
        sample();
        await server.close(10_000);
        const rssAfter = process.memoryUsage().rss;
        process.stdout.write(`RSS before ${(rssBefore / 2 ** 20).toFixed(1)} MiB, after ${(rssAfter / 2 ** 20).toFixed(1)} MiB\n`);
        process.stdout.write(
            `every 10 s (s: RSS MiB / V8 heap used MiB / suffix cache nodes): ${samples.map((entry) => `${entry.seconds}: ${entry.rssMiB.toFixed(0)}/${entry.heapMiB.toFixed(0)}/${entry.suffixCacheNodes}`).join(", ")}\n`
        );
        if (values.json !== undefined)
            await writeFile(
                values.json,
                JSON.stringify(
                    {
                        drafter: values.drafter ?? null,
                        policy: values.policy,
                        gamma: Number(values.gamma),
                        seconds,
                        maxTokens,
                        rssBefore,
                        rssAfter,
                        samples,
                        results
                    },
                    null,
                    2
                )
            );
        await draft.dispose();
        await target.dispose();
        if (directory !== undefined) await rm(directory, {recursive: true, force: true});
    }
}

await main();
