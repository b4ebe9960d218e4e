/**
 * One request cannot stall the server (issue 40): `specgate serve` on the family pair, in a child
 * process, while each hostile case runs side by side with a normal structured request and a client
 * probes /health every 50 ms. Then a normal json_schema request at T = 0 and T = 1, interleaved
 * against the same server built from an earlier tree (`--baseline-root`), with the grammar's cost per
 * token from the replies' `grammar` line.
 *
 *   npm run bench:stall
 *   npm run bench:stall -- --baseline-root /tmp/base --rounds 20
 *   npm run bench:stall -- --cases "optional properties,anyOf"
 *
 * The baseline tree is an `git archive REV | tar -x` of the commit to compare with, with node_modules
 * linked and its addon built (`node scripts/buildNativeBackend.mjs` in it). Prints one JSON object: per
 * hostile case (each schema sent --hostile-repeats times in a row) the slowest hostile request's status and seconds (target: 400 or 200 within 30 s, never 5xx),
 * the normal request's status and latency, /health p50 / p99 / max (target p99 < 100 ms) and missed
 * probes (no answer within 1 s); then the baseline comparison (target ratio ≥ 0.97: tokens per second
 * of this tree ÷ the baseline's, medians).
 */
import {type ChildProcessByStdio, spawn} from "node:child_process";
import {join} from "node:path";
import type {Readable} from "node:stream";
import {parseArgs} from "node:util";
import {hostileSchemas} from "../src/serve/testing/hostileSchemas.js";

const {values} = parseArgs({
    options: {
        "baseline-root": {type: "string"},
        rounds: {type: "string", default: "12"},
        "hostile-repeats": {type: "string", default: "10"},
        "drafter-specs": {type: "string", default: "10000"},
        /** Comma-separated parts of case names: only the hostile cases whose name contains one run (default: all). */
        cases: {type: "string"}
    }
});
const chosenCases = values.cases?.split(",").map((part) => part.trim());
const chosen = (name: string): boolean => chosenCases === undefined || chosenCases.some((part) => name.includes(part));
const root = new URL("../", import.meta.url).pathname;
const rounds = Number(values.rounds);

interface Server {
    readonly url: string;
    readonly child: ChildProcessByStdio<null, Readable, Readable>;
}

/** `specgate serve` from the tree at `tree`, on a free port; resolves once it listens. */
function startServe(tree: string, extra: readonly string[] = []): Promise<Server> {
    const args = ["serve", "--target", join(root, "models/target/model.gguf"), "--draft", join(root, "models/draft/model.gguf")];
    const child = spawn(process.execPath, ["--import", "tsx", join(tree, "src/cli/main.ts"), ...args, "--port", "0", ...extra], {
        cwd: tree,
        stdio: ["ignore", "pipe", "pipe"]
    });
    child.stdout.resume();
    let stderr = "";
    return new Promise((resolve, reject) => {
        child.stderr.on("data", (chunk: Buffer) => {
            stderr += chunk.toString();
            const match = /on (http:\/\/\S+?)\/v1 /.exec(stderr);
            if (match !== null) resolve({url: match[1]!, child});
        });
        child.on("exit", (code) => reject(new Error(`serve (${tree}) exited ${code}:\n${stderr.slice(-2000)}`)));
    });
}

async function stop(server: Server): Promise<void> {
    const exited = new Promise((resolve) => server.child.on("exit", resolve));
    server.child.kill("SIGTERM");
    await exited;
}

const headers = {"content-type": "application/json"};

/** POST `body` to `path`; status, seconds and the parsed reply. */
async function post(url: string, path: string, body: unknown): Promise<{status: number; seconds: number; reply: Record<string, unknown>}> {
    const started = performance.now();
    const response = await fetch(`${url}${path}`, {method: "POST", headers, body: JSON.stringify(body)});
    const text = await response.text();
    let reply: Record<string, unknown> = {};
    try {
        reply = JSON.parse(text) as Record<string, unknown>;
    } catch {
        // A body that is not JSON is reported by its status alone.
    }
    return {status: response.status, seconds: (performance.now() - started) / 1000, reply};
}

const normalSchema = {
    type: "object",
    properties: {name: {type: "string", maxLength: 12}, age: {type: "integer"}, kind: {enum: ["aunt", "uncle", "cousin"]}},
    required: ["name", "age", "kind"],
    additionalProperties: false
};

function structured(schema: unknown, temperature: number, seed: number, maxTokens = 48): Record<string, unknown> {
    return {
        messages: [{role: "user", content: "Describe one relative."}],
        max_tokens: maxTokens,
        temperature,
        seed,
        response_format: {type: "json_schema", json_schema: {name: "relative", schema}}
    };
}

function percentile(sorted: readonly number[], fraction: number): number {
    return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))] ?? Number.NaN;
}

const round1 = (value: number): number => Math.round(value * 10) / 10;

/** Probes /health every 50 ms until the returned stop is called: latency percentiles and missed probes (no reply in 1 s). */
function probeHealth(url: string): () => Promise<Record<string, number>> {
    const latencies: number[] = [];
    let missed = 0;
    let probing = true;
    const loop = (async () => {
        while (probing) {
            const started = performance.now();
            try {
                const response = await fetch(`${url}/health`, {signal: AbortSignal.timeout(1000)});
                await response.arrayBuffer();
                if (response.status !== 200) missed++;
                else latencies.push(performance.now() - started);
            } catch {
                missed++;
            }
            await new Promise((resolve) => setTimeout(resolve, Math.max(0, 50 - (performance.now() - started))));
        }
    })();
    return async () => {
        probing = false;
        await loop;
        const sorted = latencies.sort((a, b) => a - b);
        return {
            probes: sorted.length + missed,
            missed,
            p50Ms: round1(percentile(sorted, 0.5)),
            p99Ms: round1(percentile(sorted, 0.99)),
            maxMs: round1(sorted.at(-1) ?? Number.NaN)
        };
    };
}

/** `hostile` beside a normal structured request, /health probed meanwhile. */
async function sideBySide(
    url: string,
    hostile: () => Promise<{status: number | string; seconds: number}>
): Promise<Record<string, unknown>> {
    // One probe first, untimed: the client's first fetch pays for its own set-up.
    await (await fetch(`${url}/health`)).arrayBuffer();
    const stopProbe = probeHealth(url);
    const [bad, normal] = await Promise.all([hostile(), post(url, "/v1/chat/completions", structured(normalSchema, 1, 7))]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    return {
        hostile: {status: bad.status, seconds: Math.round(bad.seconds * 100) / 100},
        normal: {status: normal.status, seconds: Math.round(normal.seconds * 1000) / 1000},
        health: await stopProbe()
    };
}

/** `count` requests with distinct drafter specs (16 at a time), then one scrape of /metrics: its size and time. */
async function distinctDrafterSpecs(url: string, count: number): Promise<{status: string; seconds: number}> {
    const started = performance.now();
    const statuses: Record<number, number> = {};
    let next = 0;
    await Promise.all(
        Array.from({length: 16}, async () => {
            while (next < count) {
                const index = next++;
                const {status} = await post(url, "/v1/completions", {
                    prompt: "Once upon a time",
                    max_tokens: 1,
                    speculative: {drafter: `suffix:3:1:24:${1000 + index}`}
                });
                statuses[status] = (statuses[status] ?? 0) + 1;
            }
        })
    );
    const scrapeStarted = performance.now();
    const metrics = await (await fetch(`${url}/metrics`)).text();
    const scrape = performance.now() - scrapeStarted;
    const series = metrics.split("\n").filter((line) => line !== "" && !line.startsWith("#")).length;
    return {
        status: `${JSON.stringify(statuses)}; /metrics ${series} series, ${(metrics.length / 1024).toFixed(0)} KiB, scraped in ${scrape.toFixed(0)} ms`,
        seconds: (performance.now() - started) / 1000
    };
}

/** Tokens per second of one structured request, and its grammar line. */
async function structuredRate(url: string, temperature: number, seed: number): Promise<{rate: number; grammar?: unknown}> {
    const {status, seconds, reply} = await post(url, "/v1/chat/completions", structured(normalSchema, temperature, seed));
    if (status !== 200) throw new Error(`structured request: ${status} ${JSON.stringify(reply)}`);
    const usage = reply.usage as {completion_tokens: number};
    return {rate: usage.completion_tokens / seconds, grammar: reply.grammar};
}

const median = (list: readonly number[]): number =>
    percentile(
        [...list].sort((a, b) => a - b),
        0.5
    );

const report: Record<string, unknown> = {};
const server = await startServe(root);
try {
    const cases: Record<string, unknown> = {};
    // Each schema sent --hostile-repeats times in a row (the slowest reply and its status are kept), so /health has a window to be probed in.
    for (const [name, schema] of Object.entries(hostileSchemas).filter(([name]) => chosen(name)))
        cases[name] = await sideBySide(server.url, async () => {
            let slowest = {status: 0, seconds: 0};
            for (let repeat = 0; repeat < Number(values["hostile-repeats"]); repeat++) {
                const result = await post(server.url, "/v1/chat/completions", structured(schema, 1, 1, 16));
                if (result.seconds >= slowest.seconds) slowest = result;
            }
            return slowest;
        });
    const drafterCase = `${values["drafter-specs"]} distinct drafter specs, then /metrics`;
    if (chosen(drafterCase))
        cases[drafterCase] = await sideBySide(server.url, () => distinctDrafterSpecs(server.url, Number(values["drafter-specs"])));
    report.hostile = cases;
} finally {
    await stop(server);
}

if (values["baseline-root"] !== undefined) {
    const current = await startServe(root);
    const baseline = await startServe(values["baseline-root"]);
    try {
        const comparison: Record<string, unknown> = {};
        for (const temperature of [0, 1]) {
            const rates = {current: [] as number[], baseline: [] as number[]};
            let grammar: unknown;
            // Warm-up, then interleaved rounds with the same seeds on both.
            await structuredRate(current.url, temperature, 0);
            await structuredRate(baseline.url, temperature, 0);
            for (let round = 1; round <= rounds; round++) {
                const order = round % 2 === 0 ? ([current, baseline] as const) : ([baseline, current] as const);
                for (const side of order) {
                    const result = await structuredRate(side.url, temperature, round);
                    rates[side === current ? "current" : "baseline"].push(result.rate);
                    if (side === current) grammar = result.grammar;
                }
            }
            comparison[`T = ${temperature}`] = {
                currentTokensPerSecond: round1(median(rates.current)),
                baselineTokensPerSecond: round1(median(rates.baseline)),
                ratio: Math.round((median(rates.current) / median(rates.baseline)) * 1000) / 1000,
                lastGrammarLine: grammar
            };
        }
        report.againstBaseline = comparison;
    } finally {
        await stop(current);
        await stop(baseline);
    }
}
console.log(JSON.stringify(report, null, 2));
