// SIGTERM always stops `specgate serve`: with a structured stream decoding and grammar jobs still
// running on their threads, the process drains, exits 0 within the drain timeout and never crashes.
import {type ChildProcessByStdio, spawn} from "node:child_process";
import {join} from "node:path";
import type {Readable} from "node:stream";
import {describe, expect, it, vi} from "vitest";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {postStructuredChat} from "./testing/postStructuredChat.js";

vi.setConfig(modelTestTimeouts);

const root = new URL("../../", import.meta.url).pathname;
const drainSeconds = 1;

/** `specgate serve` on the family pair as a child process (through tsx, from the sources), on a free port. */
function startServe(): ChildProcessByStdio<null, Readable, Readable> {
    const args = [
        "serve",
        "--target",
        join(root, "models/target/model.gguf"),
        "--draft",
        join(root, "models/draft/model.gguf"),
        "--port",
        "0",
        "--context-size",
        "8192",
        "--drain-timeout",
        String(drainSeconds),
        // Conversions are abandoned almost at once: their threads still run when the process exits.
        "--grammar-timeout-ms",
        "50"
    ];
    return spawn(process.execPath, ["--import", "tsx", join(root, "src/cli/main.ts"), ...args], {
        cwd: root,
        stdio: ["ignore", "pipe", "pipe"]
    });
}

/** A schema within the limits that takes the converter about a second (70 objects of 100 optional properties). */
const slowSchema = {
    type: "object",
    properties: Object.fromEntries(
        Array.from({length: 70}, (_, i) => [
            `o${i}`,
            {type: "object", properties: Object.fromEntries(Array.from({length: 100}, (_, j) => [`${j}`, {}]))}
        ])
    ),
    required: Array.from({length: 70}, (_, i) => `o${i}`)
};

/** Decodes for minutes: a thousand strings of at least 8 characters. */
const longSchema = {type: "array", items: {type: "string", minLength: 8}, minItems: 1000};

describe("serve on SIGTERM", () => {
    it("drains a structured stream and exits 0 within the drain timeout, grammar threads still running", async () => {
        const child = startServe();
        let stderr = "";
        const exited = new Promise<{code: number | null; signal: NodeJS.Signals | null; at: number}>((resolve, reject) => {
            child.on("error", reject);
            child.on("exit", (code, signal) => resolve({code, signal, at: performance.now()}));
        });
        const url = await new Promise<string>((resolve, reject) => {
            child.stderr.on("data", (chunk: Buffer) => {
                stderr += chunk.toString();
                const match = /on (http:\/\/\S+?)\/v1 /.exec(stderr);
                if (match !== null) resolve(match[1]!);
            });
            void exited.then(() => reject(new Error(`serve exited before listening:\n${stderr}`)));
        });
        child.stdout.resume();

        const stream = await postStructuredChat(url, longSchema, {maxTokens: 7000, stream: true, content: "List."});
        expect(stream.status).toBe(200);
        const reader = stream.body!.getReader();
        const decoder = new TextDecoder();
        let body = decoder.decode((await reader.read()).value);
        const refused = Array.from({length: 4}, () =>
            postStructuredChat(url, slowSchema, {maxTokens: 8, stream: false, content: "List."}).then((response) => response.status)
        );
        // The conversions are on their threads before the signal.
        await new Promise((resolve) => setTimeout(resolve, 100));
        const signalledAt = performance.now();
        child.kill("SIGTERM");

        for (let part = await reader.read(); !part.done; part = await reader.read()) body += decoder.decode(part.value);
        const finished = await exited;
        expect(finished.signal, stderr).toBeNull();
        expect(finished.code, stderr).toBe(0);
        // Generous beside the drain timeout: the machine is shared.
        expect(finished.at - signalledAt).toBeLessThan(drainSeconds * 1000 + 10_000);
        expect(stderr).toMatch(/SIGTERM, draining/);
        expect(stderr).not.toMatch(/terminate called|Aborted|Segmentation fault|internal error/);
        expect(body).toMatch(/"finish_reason":"abort"[\s\S]*"code":"shutting_down"[\s\S]*data: \[DONE\]\s*$/);
        for (const status of await Promise.allSettled(refused))
            if (status.status === "fulfilled") expect([400, 503]).toContain(status.value);
    });
});
