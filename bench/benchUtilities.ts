import {type ChildProcess, spawn} from "node:child_process";
import {mkdir, open, writeFile} from "node:fs/promises";
import {dirname, resolve} from "node:path";
import {fileURLToPath} from "node:url";
import {shellQuote} from "./llamaCppTools.js";

/** Helpers the server benchmarks share: progress lines, number formatting, percentiles, server-sent events. */

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** A progress line on stderr, stamped with the time of day. */
export const log = (text: string): void => void process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${text}\n`);

export const sleep = (milliseconds: number): Promise<void> => new Promise((resolveSleep) => setTimeout(resolveSleep, milliseconds));

/** A number with `digits` decimals; "–" for a missing or non-finite one. */
export const fixed = (number: number | undefined, digits = 1): string =>
    number == null || !Number.isFinite(number) ? "–" : number.toFixed(digits);

/** A command as a shell line, paths inside the repository made relative to it. */
export const commandLine = (parts: readonly string[]): string =>
    parts.map((part) => shellQuote(part.startsWith(root + "/") ? part.slice(root.length + 1) : part)).join(" ");

/** Nearest-rank percentile of the finite values. */
export function percentile(values: readonly number[], fraction: number): number {
    const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
    if (sorted.length === 0) return Number.NaN;
    return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))];
}

/** The nearest-rank median (the lower middle of an even count). */
export const median = (values: readonly number[]): number => percentile(values, 0.5);

/** Yields the `data:` payload of each server-sent event of a response body. */
export async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const bytes of body) {
        buffer += decoder.decode(bytes, {stream: true});
        for (let end = buffer.search(/\r?\n\r?\n/); end >= 0; end = buffer.search(/\r?\n\r?\n/)) {
            const event = buffer.slice(0, end);
            buffer = buffer.slice(end + (buffer[end] === "\r" ? 4 : 2));
            const data = event
                .split(/\r?\n/)
                .filter((line) => line.startsWith("data:"))
                .map((line) => line.slice(5).replace(/^ /, ""))
                .join("\n");
            if (data !== "") yield data;
        }
    }
}

/** Writes a benchmark's result as indented JSON, making its folder. */
export async function writeJsonResult(path: string, value: unknown): Promise<void> {
    await mkdir(dirname(resolve(path)), {recursive: true});
    await writeFile(path, `${JSON.stringify(value, null, 2)}\n`);
}

/**
 * Starts a server (`label` names it in errors) with its output in `logFile`, and resolves once
 * `url`/health answers ok; an exit before that, or 180 s without it, is an error.
 */
export async function startServerProcess(
    label: string,
    binary: string,
    args: readonly string[],
    logFile: string,
    url: string
): Promise<ChildProcess> {
    const handle = await open(logFile, "w");
    const child = spawn(binary, args, {stdio: ["ignore", handle.fd, handle.fd]});
    await handle.close();
    const deadline = Date.now() + 180_000;
    for (;;) {
        if (child.exitCode != null) throw new Error(`${label} exited with ${child.exitCode}; see ${logFile}`);
        try {
            const response = await fetch(`${url}/health`);
            await response.arrayBuffer();
            if (response.ok) return child;
        } catch {
            // not listening yet
        }
        if (Date.now() > deadline) {
            child.kill("SIGKILL");
            throw new Error(`${label} did not come up in 180 s; see ${logFile}`);
        }
        await sleep(200);
    }
}

/** Stops a server: SIGTERM, then SIGKILL if it has not exited within 15 s. */
export function stopServerProcess(child: ChildProcess): Promise<void> {
    return new Promise((resolveStop) => {
        if (child.exitCode != null || child.signalCode != null) return resolveStop();
        const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
        child.once("exit", () => {
            clearTimeout(timer);
            resolveStop();
        });
        child.kill("SIGTERM");
    });
}
