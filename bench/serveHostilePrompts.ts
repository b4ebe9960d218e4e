/**
 * /health latency on a running `specgate serve` while hostile prompts arrive: prompts of one
 * repeated letter (1 MB and 300 KB by default; llama.cpp's tokenizer is quadratic on them), sent to
 * /v1/completions and /v1/chat/completions in turn, `--rounds` times each, while a second client
 * polls /health every 5 ms. The server runs in its own process, so the figures are the server's
 * alone (the load client's JSON work is not on its event loop).
 *
 *   npx tsx src/cli/main.ts serve --target models/target/model.gguf --context-size 4096 --port 8123 --max-body-bytes 2000000 &
 *   npx tsx bench/serveHostilePrompts.ts --url http://127.0.0.1:8123 [--sizes 1000000,300000] [--rounds 5] [--api-key KEY]
 *
 * Prints the statuses the prompts got and /health's p50 / p99 / max latency in milliseconds.
 */
import {parseArgs} from "node:util";

const {values} = parseArgs({
    options: {
        url: {type: "string", default: "http://127.0.0.1:8000"},
        sizes: {type: "string", default: "1000000,300000"},
        rounds: {type: "string", default: "5"},
        "api-key": {type: "string"}
    }
});
const sizes = values.sizes.split(",").map(Number);
const rounds = Number(values.rounds);
const headers: Record<string, string> = {"content-type": "application/json", ...(values["api-key"] !== undefined ? {authorization: `Bearer ${values["api-key"]}`} : {})};

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
const started = performance.now();
for (const size of sizes) {
    const text = "a".repeat(size);
    const bodies = {
        "/v1/completions": JSON.stringify({prompt: text, max_tokens: 1}),
        "/v1/chat/completions": JSON.stringify({messages: [{role: "user", content: text}], max_tokens: 1})
    };
    for (let round = 0; round < rounds; round++) {
        for (const [path, body] of Object.entries(bodies)) {
            const response = await fetch(`${values.url}${path}`, {method: "POST", headers, body});
            await response.arrayBuffer();
            const key = `${size} B ${path} → ${response.status}`;
            statuses[key] = (statuses[key] ?? 0) + 1;
        }
    }
}
const elapsed = performance.now() - started;
await new Promise((resolve) => setTimeout(resolve, 200));
probing = false;
await probe;
const sorted = [...latencies].sort((a, b) => a - b);
const round1 = (value: number): number => Math.round(value * 10) / 10;
console.log(JSON.stringify({
    statuses,
    hostileSeconds: round1(elapsed / 1000),
    health: {probes: sorted.length, p50Ms: round1(percentile(sorted, 0.5)), p99Ms: round1(percentile(sorted, 0.99)), maxMs: round1(sorted.at(-1)!)}
}, null, 2));
