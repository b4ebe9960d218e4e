// SIGINT/SIGTERM, sent to a real `specgate` process: it stops at once, says what it completed and
// "interrupted", leaves no output file (nor a temporary one) and exits 130/143; a closed stdout
// (`| head`) ends it quietly. Each signal is sent once the command shows it is at work (its output,
// or for simulate's silent loop, the signal's default action restored), not after a fixed wait; how fast it stops is bounded loosely (`stopsWithin`), as a busy machine
// may take seconds to schedule the exit, and the exit code and message show it was interrupted.
import {type ChildProcessByStdio, execFileSync, spawn} from "node:child_process";
import {constants, mkdtemp, open, readdir, readFile, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import type {Readable} from "node:stream";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {removeTemporaryFiles, trackTemporaryFile} from "../io/temporaryFiles.js";
import {ExitCode} from "./exitCodes.js";

vi.setConfig(modelTestTimeouts);

const root = new URL("../../", import.meta.url).pathname;
const target = join(root, "models", "target", "model.gguf");
const draft = join(root, "models", "draft", "model.gguf");

/** Far less than what each interrupted command had left to do (minutes), far more than a loaded machine's scheduling delays. */
const stopsWithin = 10_000;

let directory: string;
beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-interrupts-"));
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

interface Finished {
    code: number | null;
    signal: NodeJS.Signals | null;
    stdout: string;
    stderr: string;
    /** Milliseconds from the signal to the process's exit. */
    stoppedIn: number;
}

/** `specgate ARGS…` as a child process (through tsx, from the sources). */
function startCli(args: readonly string[]): ChildProcessByStdio<null, Readable, Readable> {
    return spawn(process.execPath, ["--import", "tsx", join(root, "src", "cli", "main.ts"), ...args], {
        // tsx resolves from here; every output is written under `directory`.
        cwd: root,
        stdio: ["ignore", "pipe", "pipe"],
        env: {...process.env, FORCE_COLOR: "0"}
    });
}

/** Starts the CLI, waits until `ready` matches its output, sends `signal` and waits for the exit. */
function interruptWhen(args: readonly string[], ready: RegExp, signal: NodeJS.Signals): Promise<Finished> {
    const child = startCli(args);
    let stdout = "";
    let stderr = "";
    let sentAt: number | undefined;
    return new Promise((resolve, reject) => {
        const check = (): void => {
            if (sentAt === undefined && ready.test(stdout + stderr)) {
                sentAt = performance.now();
                child.kill(signal);
            }
        };
        child.stdout.on("data", (chunk: Buffer) => {
            stdout += chunk.toString();
            check();
        });
        child.stderr.on("data", (chunk: Buffer) => {
            stderr += chunk.toString();
            check();
        });
        child.on("error", reject);
        child.on("exit", (code, exitSignal) => {
            if (sentAt === undefined) reject(new Error(`exited (${code}) before it was interrupted:\n${stdout}\n${stderr}`));
            else resolve({code, signal: exitSignal, stdout, stderr, stoppedIn: performance.now() - sentAt});
        });
    });
}

const noValue = (): undefined => undefined;

/**
 * Waits until process `pid` no longer catches SIGINT (Linux: SigCgt in /proc/PID/status); false at
 * once where /proc does not say, or when the process has ended.
 */
async function stopsCatchingSigint(pid: number): Promise<boolean> {
    for (;;) {
        const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => undefined);
        const caught = status === undefined ? undefined : /^SigCgt:\s*([0-9a-f]+)$/m.exec(status)?.[1];
        if (caught === undefined) return false;
        if ((BigInt(`0x${caught}`) & (1n << 1n)) === 0n) return true;
        await new Promise((resolve) => setTimeout(resolve, 10));
    }
}

describe("an interrupted command", () => {
    it("generate stops at SIGINT, prints how far it got and exits 130 without its --json file", async () => {
        const json = join(directory, "generation.json");
        const finished = await interruptWhen(
            [
                "generate",
                "Repeat: 1 2 3",
                "--target",
                target,
                "--draft",
                draft,
                "--max-tokens",
                "30000",
                "--context-size",
                "32768",
                "--json",
                json
            ],
            // The generation is streaming.
            /\S{8}/,
            "SIGINT"
        );
        expect(finished.code, finished.stderr).toBe(ExitCode.interrupted);
        expect(finished.stoppedIn).toBeLessThan(stopsWithin);
        expect(finished.stderr).toMatch(/^specgate generate: \d+ tokens generated in [\d.]+ s, \S+ not written; interrupted \(SIGINT\)$/m);
        expect(finished.stderr).not.toMatch(/at .*\.ts:\d+/);
        expect(await readdir(directory)).toEqual([]);
    });

    it("generate exits 143 on SIGTERM", async () => {
        const finished = await interruptWhen(
            ["generate", "Repeat: 1 2 3", "--target", target, "--max-tokens", "30000", "--context-size", "32768"],
            /\S{8}/,
            "SIGTERM"
        );
        expect(finished.code, finished.stderr).toBe(ExitCode.terminated);
        expect(finished.stoppedIn).toBeLessThan(stopsWithin);
        expect(finished.stderr).toMatch(/interrupted \(SIGTERM\)\n$/);
    });

    it("bench, which does not watch the signal itself, stops at once all the same and says how many runs it did", async () => {
        const json = join(directory, "bench.json");
        const child = startCli([
            "bench",
            "--target",
            target,
            "--draft",
            draft,
            "--prompts",
            join(root, "examples", "family-prompts.jsonl"),
            "--policies",
            "strict",
            "--gamma",
            "4",
            "--no-predictor",
            "--repeats",
            "100",
            "--json",
            json
        ]);
        let stderr = "";
        // Its first progress line (piped: after 10 s of runs) says it is at work.
        const running = new Promise<void>((resolve) =>
            child.stderr.on("data", (chunk: Buffer) => {
                stderr += chunk.toString();
                if (/^specgate bench: \d+\/\d+ runs/m.test(stderr)) resolve();
            })
        );
        const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
        await Promise.race([running, exited]);
        const sentAt = performance.now();
        child.kill("SIGINT");
        const code = await exited;
        expect(performance.now() - sentAt).toBeLessThan(stopsWithin);
        expect(code, stderr).toBe(ExitCode.interrupted);
        expect(stderr).toMatch(/^specgate bench: \d+ of \d+ runs done; interrupted \(SIGINT\)$/m);
        expect(await readdir(directory)).toEqual([]);
    });

    it("simulate, one synchronous loop, ends at once (the signal's default action) and writes nothing", async () => {
        // The step is read from a named pipe: writing it completes once the command has opened its input,
        // the last thing it does before the loop.
        const step = join(directory, "step.json");
        execFileSync("mkfifo", [step]);
        const report = join(directory, "report.json");
        const child = startCli(["simulate", "--input", step, "--samples", "1000000000", "--json", report]);
        let stderr = "";
        child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
        const exited = new Promise<{code: number | null; signal: NodeJS.Signals | null}>((resolve) =>
            child.on("exit", (code, signal) => resolve({code, signal}))
        );
        const written = writeFile(
            step,
            JSON.stringify({policy: {kind: "strict"}, targetProbs: [[0.5, 0.5]], draftProbs: [], draftTokens: []})
        );
        // A write that fails shows as the command's own failure below.
        const early = await Promise.race([written.then(noValue, noValue), exited]);
        if (early !== undefined) {
            // It ended without opening its input: a reader of our own lets the pending write finish.
            await (await open(step, constants.O_RDONLY | constants.O_NONBLOCK)).close();
            await written.catch(() => undefined);
            throw new Error(`simulate exited (${early.code}) before reading its input:\n${stderr}`);
        }
        // It enters the loop once it no longer catches SIGINT (it hands the signal back to its default action).
        const watched = await stopsCatchingSigint(child.pid!);
        const sentAt = performance.now();
        child.kill("SIGINT");
        const {code, signal} = await exited;
        expect(performance.now() - sentAt).toBeLessThan(stopsWithin);
        if (watched) expect(signal, `${code} ${signal} ${stderr}`).toBe("SIGINT");
        // Where /proc cannot tell, the signal may come before the loop: the interrupt handler then exits 130.
        else expect(signal === "SIGINT" || code === ExitCode.interrupted, `${code} ${signal} ${stderr}`).toBe(true);
        await rm(step);
        expect(await readdir(directory)).toEqual([]);
    });

    it("a closed stdout (| head) ends the command quietly", async () => {
        const child = startCli(["tais", "compute", "--help"]);
        child.stdout.destroy();
        let stderr = "";
        child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
        const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
        expect(stderr).not.toMatch(/EPIPE|Error|at /);
        expect(code).toBe(0);
    });
});

describe("removeTemporaryFiles", () => {
    it("removes the temporary files of writes in flight, and only those", async () => {
        const kept = join(directory, "kept.tmp");
        const inFlight = join(directory, "out.json.1.ab.tmp");
        const done = join(directory, "done.json.1.ab.tmp");
        await writeFile(kept, "");
        await writeFile(inFlight, "{");
        await writeFile(done, "{}");
        trackTemporaryFile(inFlight);
        trackTemporaryFile(done)();
        removeTemporaryFiles();
        expect((await readdir(directory)).filter((name) => name.endsWith(".tmp")).sort()).toEqual(["done.json.1.ab.tmp", "kept.tmp"]);
        await rm(kept);
        await rm(done);
    });
});
