/**
 * /health latency on a running `specgate serve` while hostile prompts arrive: prompts of one
 * repeated letter (1 MB and 300 KB by default; llama.cpp's tokenizer is quadratic on them), sent to
 * /v1/completions and /v1/chat/completions in turn, and prompts of token ids (`--id-counts`, default
 * 500,000 one-digit ids: a 1 MB body), `--rounds` times each, while a second client
 * polls /health every 5 ms. The server runs in its own process, so the figures are the server's
 * alone (the load client's JSON work is not on its event loop).
 *
 *   npx tsx src/cli/main.ts serve --target models/target/model.gguf --context-size 4096 --port 8123 --max-body-bytes 2000000 &
 *   npx tsx bench/serveHostilePrompts.ts --url http://127.0.0.1:8123 [--sizes 1000000,300000] [--id-counts 500000] [--rounds 5] [--api-key KEY]
 *
 * Prints the statuses the prompts got and /health's p50 / p99 / max latency in milliseconds.
 */
import {parseArgs} from "node:util";

const {values} = parseArgs({
    options: {
        url: {type: "string", default: "http://127.0.0.1:8000"},
        sizes: {type: "string", default: "1000000,300000"},
        "id-counts": {type: "string", default: "500000"},
        rounds: {type: "string", default: "5"},
        "api-key": {type: "string"}
    }
});
const sizes = values.sizes
    .split(",")
    .filter((size) => size !== "")
    .map(Number);
const idCounts = values["id-counts"]
    .split(",")
    .filter((count) => count !== "")
    .map(Number);
const rounds = Number(values.rounds);
const headers: Record<string, string> = {
    "content-type": "application/json",
    ...(values["api-key"] !== undefined ? {authorization: `Bearer ${values["api-key"]}`} : {})
};

function percentile(sorted: readonly number[], fraction: number): number {
    return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)];
}

// One probe first, untimed: the client's first fetch pays for its own set-up (tens of ms), not the server's.
await (await fetch(`${values.url}/health`)).arrayBuffer();
const latencies: number[] = [];
let probing = true;
const probe = (async () => {
    while (probing) {
        const started = performance.now();
        await (await fetch(`${values.url}/health`)).arrayBuffer();
        latencies.push(performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 5));
    }
})();

const statuses: Record<string, number> = {};
const cases: Array<{label: string; path: string; body: string}> = [];
for (const size of sizes) {
    const text = "a".repeat(size);
    cases.push({label: `${size} B`, path: "/v1/completions", body: JSON.stringify({prompt: text, max_tokens: 1})});
    cases.push({
        label: `${size} B`,
        path: "/v1/chat/completions",
        body: JSON.stringify({messages: [{role: "user", content: text}], max_tokens: 1})
    });
}
for (const count of idCounts) {
    const body = JSON.stringify({prompt: Array.from({length: count}, (_, index) => index % 10), max_tokens: 1});
    cases.push({label: `${count} ids (${body.length} B)`, path: "/v1/completions", body});
}
const started = performance.now();
for (const {label, path, body} of cases) {
    for (let round = 0; round < rounds; round++) {
        const response = await fetch(`${values.url}${path}`, {method: "POST", headers, body});
        await response.arrayBuffer();
        const key = `${label} ${path} → ${response.status}`;
        statuses[key] = (statuses[key] ?? 0) + 1;
    }
}
const elapsed = performance.now() - started;
await new Promise((resolve) => setTimeout(resolve, 200));
probing = false;
await probe;
const sorted = [...latencies].sort((a, b) => a - b);
const round1 = (value: number): number => Math.round(value * 10) / 10;
console.log(
    JSON.stringify(
        {
            statuses,
            hostileSeconds: round1(elapsed / 1000),
            health: {
                probes: sorted.length,
                p50Ms: round1(percentile(sorted, 0.5)),
                p99Ms: round1(percentile(sorted, 0.99)),
                maxMs: round1(sorted.at(-1)!)
            }
        },
        null,
        2
    )
);
