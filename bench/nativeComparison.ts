/**
 * specgate against native llama.cpp, on the same GGUF files, in one run.
 *
 * llama.cpp's own tools are built from the same checkout as specgate's native backend
 * (scripts/buildLlamaCppBaselines.sh: llama-server, llama-bench, llama-speculative-simple). For each
 * case × temperature × threads × {target-only, strict γ = 4} the two arms run INTERLEAVED, one
 * repetition at a time (specgate, native, native, specgate, …: the first arm alternates), so load from
 * other processes on a shared machine falls on both arms alike; the table gives each arm's median
 * tok/s and the ratio specgate / native of the same run.
 *
 *   arm          target-only                                  strict γ = 4
 *   specgate     generate() on the native backend, no draft   generate() with the draft model, strict
 *   native       llama-server /completion (timings.           llama-speculative-simple --spec-type draft-simple
 *                predicted_per_second: decode only)           --spec-draft-n-max 4 --spec-draft-n-min 0 --spec-draft-p-min 0
 *
 * Both arms decode the same prompt tokens (specgate's tokenization, BOS included) with the same
 * sampler: temperature T, top-k 0, top-p 1, min-p 0 and llama.cpp's other samplers off; EOS is ignored
 * on both sides (llama.cpp: ignore_eos; specgate: the target is presented without an EOS id), so every
 * generation runs to its token budget. Cases: the shipped family pair; a d768×8 F32 target with a
 * d256×2 draft; a V = 152,000 pair (d256×4 F32 target, d64×1 draft), both written by `specgate
 * fixtures` under .specgate/bench-native/. Besides the pairs it measures: llama-bench -p 0 -n 128 (raw
 * decode and 1 → 2-thread scaling), the per-call cost of a single-token decode on the family target
 * through NativeBackend (interleaved with llama-bench's), and specgate's time split at T = 0.8 on the V = 152,000 pair (llama_decode,
 * row transfer, everything else: sampling, policy, glue) for strict, fuzzy and calibrated.
 * Secondary: llama.cpp's ngram drafting (llama-speculative-simple --spec-type ngram-simple) beside
 * specgate's `ngram` drafter on the family target.
 *
 *   npm run bench:native                       # full run (≈ 12 minutes on 2 cores); Markdown on stdout
 *   npm run bench:native -- --quick            # smoke run (1 thread, 2 repetitions, 24 tokens; ≈ 1.5 minutes)
 *   npm run bench:native -- --json FILE --reps 5 --tokens 64 --threads 1,2 --temperatures 0,0.8 --cases family,d768,v152k --no-ngram
 *   npm run bench:native -- --cases qwen3 --threads 1 --no-ngram   # the V = 152k figures on Qwen3's real vocabulary
 *   npm run bench:native -- --cases twin-0.1b,twin-1b --threads 2 --temperatures 0 --no-ngram   # widened twins: speculation that pays
 *
 * Ratios and speed-ups carry 95% bootstrap intervals over the repetitions (bench/speedIntervals.ts).
 * The twins' other arms (n-gram, block, tree, a widened draft, Q8_0) are in `npm run bench:twins`,
 * the device bench's driver run on this CPU.
 *   npm run bench:native -- --scaling-only --threads 1,2 --cases v152k   # target-only pairs at 1 and 2 threads
 *   npm run bench:native -- --contention --scaling-only --threads 2 --cases v152k   # one core kept busy by another process
 *
 * --contention starts a busy loop pinned to the last core (`taskset -c N-1 sh -c 'while :; do :; done'`)
 * before the first case and stops it at the end, so both arms of every pair (and llama-bench) run
 * with one core taken by another process. The report names the CPU and its vector instruction sets
 * (from /proc/cpuinfo, and ggml's own llama_print_system_info through the addon's backendInfo()).
 * --fixed-threads turns specgate's adaptiveThreads off (NativeBackendOptions): always the requested threads.
 * JSON (every repetition, medians, commands, targets): --json FILE, default .specgate/bench-native/result.json.
 */
import {benchMachine} from "./cpuInstructionSet.js";
import {formatInterval, median, medianInterval, medianRatioInterval} from "./speedIntervals.js";
import {spawn, spawnSync} from "node:child_process";
import {existsSync, readFileSync} from "node:fs";
import {mkdir, open, writeFile} from "node:fs/promises";
import {loadavg} from "node:os";
import {dirname, join, resolve} from "node:path";
import {fileURLToPath} from "node:url";
import type {BackendSequence, EvaluateOptions, ModelBackend} from "../src/backend/ModelBackend.js";
import {NativeBackend} from "../src/backend/NativeBackend.js";
import {defaultBenchPrompts} from "../src/benchRunner/defaultPrompts.js";
import type {SamplingOptions} from "../src/distributions/SamplingOptions.js";
import {generate} from "../src/engine/generate.js";
import type {GenerationOptionsInput} from "../src/engine/GenerationOptions.js";
import {parsePolicySpec} from "../src/policies/parsePolicySpec.js";
import {freePort} from "../src/serve/testing/freePort.js";
import {
    draftModelFlags,
    llamaServerSampling,
    nativeSamplerFlags,
    ngramDraftFlags,
    runSpeculativeSimpleUntilSummary,
    runTool as runLlamaCppTool,
    shellQuote
} from "./llamaCppTools.js";

// ---------------------------------------------------------------------------------------------
// Settings

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const argv = process.argv.slice(2);
const flag = (name: string): boolean => argv.includes(name);
const value = (name: string): string | undefined => {
    const index = argv.indexOf(name);
    return index >= 0 ? argv[index + 1] : undefined;
};
const quick = flag("--quick");
const reps = Number(value("--reps") ?? (quick ? 2 : 5));
const maxTokens = Number(value("--tokens") ?? (quick ? 24 : 64));
const threadCounts = (value("--threads") ?? (quick ? "1" : "1,2")).split(",").map(Number);
const temperatures = (value("--temperatures") ?? "0,0.8").split(",").map(Number);
const caseNames = (value("--cases") ?? "family,d768,v152k").split(",");
/** Target-only pairs only (for a thread-scaling run): no γ = 4 pairs, n-gram rows, time split or single-token loop. */
const scalingOnly = flag("--scaling-only");
const withNgram = !flag("--no-ngram") && !scalingOnly;
/** One core kept busy by another process for the whole run (both arms under it). */
const contention = flag("--contention");
/** specgate with adaptiveThreads off (always the requested threads): the collapse under contention, for comparison. */
const fixedThreads = flag("--fixed-threads");
const jsonPath = value("--json") ?? join(root, ".specgate/bench-native/result.json");
const gamma = 4;
const modes = scalingOnly ? ["target-only"] : ["target-only", `strict γ=${gamma}`];
/** The family target decodes a token in ≈ 0.3 ms, so one generation is a few milliseconds: it gets 3× the repetitions. */
const repsOf = (benchCase: {name: string}): number => (benchCase.name === "family" ? 3 * reps : reps);
const binDirectory = join(root, "native/build/baselines/bin");
const fixtureDirectory = join(root, ".specgate/bench-native");
const logDirectory = join(fixtureDirectory, "logs");

interface BenchCase {
    name: string;
    label: string;
    target: string;
    draft: string;
    prompts: readonly string[];
    /** The `specgate fixtures` arguments that wrote the pair (absent for the shipped family). */
    fixtures?: string[];
}

const familyPrompts = readFileSync(join(root, "examples/family-prompts.jsonl"), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => (JSON.parse(line) as {prompt: string}).prompt);
function twinCase(name: string, shape: string, type: "F16" | "Q8_0" = "F16"): Record<string, BenchCase> {
    const directory = join(fixtureDirectory, name);
    return {
        [name]: {
            name,
            label: `widened twin of the family target at ${shape.split(",").slice(0, 2).join("×")}, ${type} (family draft)`,
            target: join(directory, "target.gguf"),
            draft: join(root, "models/draft/model.gguf"),
            prompts: familyPrompts,
            fixtures: ["--widen-from", join(root, "models/target/model.gguf"), "--target-shape", shape, "--type", type, "--out", directory]
        }
    };
}
const cases: Record<string, BenchCase> = {
    family: {
        name: "family",
        label: "family pair (d128×4 target, 260 tokens)",
        target: join(root, "models/target/model.gguf"),
        draft: join(root, "models/draft/model.gguf"),
        prompts: familyPrompts
    },
    d768: {
        name: "d768",
        label: "d768×8 F32 pair (draft d256×2)",
        target: join(fixtureDirectory, "d768/target.gguf"),
        draft: join(fixtureDirectory, "d768/draft.gguf"),
        prompts: defaultBenchPrompts,
        fixtures: [
            "--out",
            join(fixtureDirectory, "d768"),
            "--target-shape",
            "768,8,12,2048",
            "--draft-shape",
            "256,2,4,768",
            "--type",
            "F32",
            "--context",
            "512"
        ]
    },
    v152k: {
        name: "v152k",
        label: "V = 152,000 pair (d256×4 F32 target, d64×1 draft)",
        target: join(fixtureDirectory, "v152k/target.gguf"),
        draft: join(fixtureDirectory, "v152k/draft.gguf"),
        prompts: defaultBenchPrompts,
        fixtures: [
            "--out",
            join(fixtureDirectory, "v152k"),
            "--target-shape",
            "256,4,4,1024",
            "--draft-shape",
            "64,1,1,192",
            "--type",
            "F32",
            "--context",
            "512",
            "--vocabulary-size",
            "152000"
        ]
    },
    // Widened twins of the family target (src/gguf/widenLlamaModel.ts): its function, so the family
    // draft's acceptance, at the cost of d768×8 (0.06B parameters) and d2048×16 (0.82B), F16 or Q8_0.
    ...twinCase("twin-0.1b", "768,8,24,2048"),
    ...twinCase("twin-1b", "2048,16,64,5632"),
    ...twinCase("twin-0.1b-q8", "768,8,24,2048", "Q8_0"),
    ...twinCase("twin-1b-q8", "2048,16,64,5632", "Q8_0"),
    qwen3: {
        name: "qwen3",
        label: "Qwen3's real vocabulary (151,669 tokens, BPE; d256×4 F32 target, d64×1 draft)",
        target: join(fixtureDirectory, "qwen3/target.gguf"),
        draft: join(fixtureDirectory, "qwen3/draft.gguf"),
        prompts: defaultBenchPrompts,
        fixtures: [
            "--out",
            join(fixtureDirectory, "qwen3"),
            "--target-shape",
            "256,4,4,1024",
            "--draft-shape",
            "64,1,1,192",
            "--type",
            "F32",
            "--context",
            "512",
            "--tokenizer",
            "qwen3"
        ]
    }
};

// ---------------------------------------------------------------------------------------------
// Small helpers

const log = (text: string): void => void process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${text}\n`);
const fixed = (number: number | undefined, digits = 2): string =>
    number == null || !Number.isFinite(number) ? "–" : number.toFixed(digits);
const commandLine = (parts: readonly string[]): string =>
    parts.map((part) => shellQuote(part.startsWith(root + "/") ? part.slice(root.length + 1) : part)).join(" ");

function ensureBaselines(): void {
    const tools = ["llama-server", "llama-bench", "llama-speculative-simple"];
    if (tools.every((tool) => existsSync(join(binDirectory, tool)))) return;
    log("building llama.cpp's tools from the bundled checkout (scripts/buildLlamaCppBaselines.sh; ≈ 10 minutes the first time)");
    const build = spawnSync("bash", [join(root, "scripts/buildLlamaCppBaselines.sh")], {stdio: ["ignore", "inherit", "inherit"]});
    if (build.status !== 0) throw new Error("scripts/buildLlamaCppBaselines.sh failed");
}

function ensureFixtures(benchCase: BenchCase): void {
    if (benchCase.fixtures == null || (existsSync(benchCase.target) && existsSync(benchCase.draft))) return;
    log(`writing fixtures: specgate fixtures ${benchCase.fixtures.join(" ")}`);
    const tsx = join(root, "node_modules/.bin/tsx");
    const result = spawnSync(tsx, [join(root, "src/cli/main.ts"), "fixtures", ...benchCase.fixtures], {
        stdio: ["ignore", "ignore", "inherit"]
    });
    if (result.status !== 0) throw new Error(`specgate fixtures failed for ${benchCase.name}`);
}

const sleep = (milliseconds: number): Promise<void> => new Promise((resolveSleep) => setTimeout(resolveSleep, milliseconds));

/** Runs a tool to the end; stdout and stderr together (llama.cpp logs to stderr). */
function runTool(binary: string, args: readonly string[], timeoutMilliseconds = 300_000): Promise<{code: number | null; output: string}> {
    return runLlamaCppTool(binDirectory, binary, args, timeoutMilliseconds);
}

// ---------------------------------------------------------------------------------------------
// The native arms

class LlamaServer {
    private constructor(
        private readonly child: ReturnType<typeof spawn>,
        public readonly port: number,
        public readonly command: string
    ) {}

    public static async start(model: string, threads: number, contextSize: number, logFile: string): Promise<LlamaServer> {
        const port = await freePort();
        const args = [
            "-m",
            model,
            "-t",
            String(threads),
            "-tb",
            String(threads),
            "-c",
            String(contextSize),
            "-np",
            "1",
            "--no-webui",
            "--host",
            "127.0.0.1",
            "--port",
            String(port)
        ];
        const handle = await open(logFile, "w");
        const child = spawn(join(binDirectory, "llama-server"), args, {stdio: ["ignore", handle.fd, handle.fd]});
        await handle.close();
        const server = new LlamaServer(child, port, commandLine([join(binDirectory, "llama-server"), ...args]));
        const deadline = Date.now() + 120_000;
        for (;;) {
            if (child.exitCode != null) throw new Error(`llama-server exited with ${child.exitCode}; see ${logFile}`);
            try {
                const response = await fetch(`http://127.0.0.1:${port}/health`);
                if (response.ok) return server;
            } catch {
                // not listening yet
            }
            if (Date.now() > deadline) {
                child.kill("SIGKILL");
                throw new Error(`llama-server did not come up; see ${logFile}`);
            }
            await sleep(200);
        }
    }

    /** Decode tok/s of one /completion (timings.predicted_per_second: prompt excluded, first token free). */
    public async complete(
        promptTokens: readonly number[],
        temperature: number,
        tokens: number,
        seed: number
    ): Promise<{tokensPerSecond: number; predicted: number}> {
        const response = await fetch(`http://127.0.0.1:${this.port}/completion`, {
            method: "POST",
            headers: {"content-type": "application/json"},
            body: JSON.stringify({
                ...serverSampling(temperature, seed),
                prompt: promptTokens,
                n_predict: tokens,
                stream: false,
                cache_prompt: true
            })
        });
        if (!response.ok) throw new Error(`llama-server /completion: ${response.status} ${await response.text()}`);
        const body = (await response.json()) as {timings: {predicted_per_second: number; predicted_n: number}};
        return {tokensPerSecond: body.timings.predicted_per_second, predicted: body.timings.predicted_n};
    }

    public stop(): Promise<void> {
        return new Promise((resolveStop) => {
            if (this.child.exitCode != null) return resolveStop();
            this.child.once("exit", () => resolveStop());
            this.child.kill("SIGTERM");
        });
    }
}

function serverSampling(temperature: number, seed: number) {
    return {...llamaServerSampling(temperature), ignore_eos: true, seed};
}

let speculativeSimpleRetries = 0;

interface SpeculativeRun {
    tokensPerSecond: number;
    decoded: number;
    promptTokens: number;
    drafted: number;
    accepted: number;
    command: string;
}

async function runSpeculativeSimple(options: {
    target: string;
    draft?: string;
    specType?: string;
    prompt: string;
    threads: number;
    contextSize: number;
    temperature: number;
    tokens: number;
    seed: number;
}): Promise<SpeculativeRun> {
    // A draft model drafts exactly γ tokens a step (no minimum, no confidence cut-off); n-gram lookup up to γ.
    const drafting = options.draft != null ? draftModelFlags(options.draft, gamma) : ngramDraftFlags(gamma, options.specType);
    const args = [
        "-m",
        options.target,
        ...drafting,
        "-t",
        String(options.threads),
        "-tb",
        String(options.threads),
        "-td",
        String(options.threads),
        "-c",
        String(options.contextSize),
        "-n",
        String(options.tokens),
        ...nativeSamplerFlags(options.temperature, options.seed),
        "-p",
        options.prompt
    ];
    const command = commandLine([join(binDirectory, "llama-speculative-simple"), ...args.slice(0, -2)]) + " -p '<prompt>'";
    const {code, output, retries} = await runSpeculativeSimpleUntilSummary(binDirectory, args, 5, 300_000);
    speculativeSimpleRetries += retries;
    const decoded = /decoded\s+(\d+) tokens in\s+([\d.]+) seconds, speed:\s+([\d.]+) t\/s/.exec(output);
    const encoded = /encoded\s+(\d+) tokens/.exec(output);
    if (code !== 0 || decoded == null) {
        const logFile = join(logDirectory, `speculative-simple-failed-${Date.now()}.log`);
        await writeFile(logFile, `${command}\n\n${output}`);
        throw new Error(`llama-speculative-simple failed (exit ${code}; output in ${logFile}): ${output.slice(-1000)}`);
    }
    const drafted = Number(/n_drafted\s*=\s*(\d+)/.exec(output)?.[1] ?? Number.NaN);
    const accepted = Number(/n_accept\s*=\s*(\d+)/.exec(output)?.[1] ?? Number.NaN);
    return {
        tokensPerSecond: Number(decoded[3]),
        decoded: Number(decoded[1]),
        promptTokens: Number(encoded?.[1] ?? Number.NaN),
        drafted,
        accepted,
        command
    };
}

interface LlamaBenchRow {
    threads: number;
    tokensPerSecond: number;
    stddev: number;
}

async function runLlamaBench(model: string, threads: readonly number[]): Promise<{rows: LlamaBenchRow[]; command: string}> {
    const args = ["-m", model, "-p", "0", "-n", "128", "-t", threads.join(","), "-r", quick ? "2" : "3", "-o", "json"];
    const {code, output} = await runTool("llama-bench", args, 600_000);
    const start = output.indexOf("[");
    if (code !== 0 || start < 0) throw new Error(`llama-bench failed (${code}): ${output.slice(-2000)}`);
    const parsed = JSON.parse(output.slice(start, output.lastIndexOf("]") + 1)) as Array<{
        n_threads: number;
        avg_ts: number;
        stddev_ts: number;
    }>;
    return {
        rows: parsed.map((row) => ({threads: row.n_threads, tokensPerSecond: row.avg_ts, stddev: row.stddev_ts})),
        command: commandLine([join(binDirectory, "llama-bench"), ...args])
    };
}

// ---------------------------------------------------------------------------------------------
// The specgate arm

/**
 * The backend as generate() sees it in this benchmark: no EOS id (so generation runs to its token
 * budget, as llama.cpp's ignore_eos), and, where `record` is given, sequences wrapped to attribute
 * every evaluation's wall time to llama_decode, row transfer and the rest.
 */
function presented(backend: ModelBackend, record?: EvaluationRecord[]): ModelBackend {
    return {
        backendKind: backend.backendKind,
        vocabularySize: backend.vocabularySize,
        contextSize: backend.contextSize,
        bosToken: backend.bosToken,
        eosToken: undefined,
        tokenize: (text) => backend.tokenize(text),
        detokenize: (tokens) => backend.detokenize(tokens),
        vocabularyIdentity: () => backend.vocabularyIdentity(),
        createSequence: async () => {
            const sequence = await backend.createSequence();
            return record == null ? sequence : recorded(sequence, record);
        },
        dispose: () => backend.dispose()
    };
}

interface EvaluationRecord {
    start: number;
    wall: number;
    decode: number;
    transfer: number;
    /** Sampler rows computed natively inside the call (evaluateDistributions). */
    sampling: number;
}

function recorded(sequence: BackendSequence, record: EvaluationRecord[]): BackendSequence {
    const timed = async <T>(call: () => Promise<T>): Promise<T> => {
        const before = {
            decode: sequence.timings?.decodeMilliseconds ?? 0,
            transfer: sequence.timings?.transferMilliseconds ?? 0,
            sampling: sequence.timings?.samplingMilliseconds ?? 0
        };
        const start = performance.now();
        const result = await call();
        record.push({
            start,
            wall: performance.now() - start,
            decode: (sequence.timings?.decodeMilliseconds ?? 0) - before.decode,
            transfer: (sequence.timings?.transferMilliseconds ?? 0) - before.transfer,
            sampling: (sequence.timings?.samplingMilliseconds ?? 0) - before.sampling
        });
        return result;
    };
    const evaluateArgmax = sequence.evaluateArgmax;
    const evaluateDistributions = sequence.evaluateDistributions;
    return {
        get tokens() {
            return sequence.tokens;
        },
        get timings() {
            return sequence.timings;
        },
        evaluate: (tokens: readonly number[], options?: EvaluateOptions) => timed(() => sequence.evaluate(tokens, options)),
        evaluateArgmax:
            evaluateArgmax == null
                ? undefined
                : (tokens: readonly number[], options?: EvaluateOptions) => timed(() => evaluateArgmax.call(sequence, tokens, options)),
        evaluateDistributions:
            evaluateDistributions == null
                ? undefined
                : (tokens: readonly number[], sampling: SamplingOptions, options?: EvaluateOptions) =>
                      timed(() => evaluateDistributions.call(sequence, tokens, sampling, options)),
        rollback: (count) => sequence.rollback(count),
        clear: () => sequence.clear(),
        dispose: () => sequence.dispose()
    };
}

function promptTokensOf(backend: ModelBackend, prompt: string): number[] {
    const tokens = backend.tokenize(prompt);
    if (backend.bosToken != null && tokens[0] !== backend.bosToken) tokens.unshift(backend.bosToken);
    return tokens;
}

// ---------------------------------------------------------------------------------------------
// The run

interface PairRow {
    case: string;
    temperature: number;
    threads: number;
    mode: string;
    specgate: number[];
    native: number[];
    ratios: number[];
    specgateTokensPerStep: number;
    nativeTokensPerStep: number;
    specgateCostCurve?: Record<number, number>;
    specgateDraftMilliseconds?: number | null;
    promptMismatches: number;
    nativeCommand: string;
}

const machine = benchMachine();
const llamaCommit = (() => {
    const result = spawnSync("git", ["-C", join(root, "native/build/llama.cpp"), "describe", "--always", "--tags"], {encoding: "utf8"});
    return result.status === 0 ? result.stdout.trim() : "unknown";
})();
const started = new Date();
const loadAtStart = loadavg();
const pairs: PairRow[] = [];
const llamaBench: Record<string, {rows: LlamaBenchRow[]; command: string}> = {};
const ngramRows: Array<{
    temperature: number;
    specgate: number[];
    native: number[];
    specgateTokensPerStep: number;
    nativeTokensPerStep: number;
    nativeCommand: string;
}> = [];
const timeSplit: Array<Record<string, number | string>> = [];
let singleToken: Record<string, number | string> | undefined;

ensureBaselines();
await mkdir(logDirectory, {recursive: true});

/** The busy neighbour of --contention: a shell loop pinned to the last core, for the whole run. */
const busyCore = machine.cores - 1;
const busyCommand = existsSync("/usr/bin/taskset")
    ? ["taskset", "-c", String(busyCore), "sh", "-c", "while :; do :; done"]
    : ["sh", "-c", "while :; do :; done"];
const neighbour = contention ? spawn(busyCommand[0], busyCommand.slice(1), {stdio: "ignore"}) : undefined;
if (neighbour != null) {
    process.once("exit", () => neighbour.kill("SIGKILL"));
    log(`contention: ${busyCommand.join(" ")} (pid ${neighbour.pid}) keeps a core busy for the whole run`);
    await sleep(500);
}
await mkdir(dirname(resolve(jsonPath)), {recursive: true});

for (const name of caseNames) {
    const benchCase = cases[name];
    if (benchCase == null) throw new Error(`unknown case ${name}; expected one of ${Object.keys(cases).join(", ")}`);
    ensureFixtures(benchCase);
    log(`${benchCase.label}: llama-bench -p 0 -n 128 -t ${threadCounts.join(",")}`);
    llamaBench[name] = await runLlamaBench(benchCase.target, threadCounts);

    for (const threads of threadCounts) {
        const target = await NativeBackend.load(benchCase.target, {threads, adaptiveThreads: !fixedThreads});
        const draft = await NativeBackend.load(benchCase.draft, {threads, adaptiveThreads: !fixedThreads});
        const contextSize = target.contextSize;
        const server = await LlamaServer.start(
            benchCase.target,
            threads,
            contextSize,
            join(logDirectory, `server-${name}-t${threads}.log`)
        );
        try {
            for (const temperature of temperatures) {
                for (const mode of modes) {
                    const speculative = mode !== "target-only";
                    const options = (seed: number, tokens = maxTokens): GenerationOptionsInput => ({
                        policy: {kind: "strict"},
                        gamma: speculative ? gamma : 0,
                        sampling: {temperature, topK: 0, topP: 1, minP: 0},
                        maxTokens: tokens,
                        seed
                    });
                    const row: PairRow = {
                        case: name,
                        temperature,
                        threads,
                        mode,
                        specgate: [],
                        native: [],
                        ratios: [],
                        specgateTokensPerStep: Number.NaN,
                        nativeTokensPerStep: Number.NaN,
                        promptMismatches: 0,
                        nativeCommand: ""
                    };
                    const specgateSteps: Array<[number, number]> = [];
                    const nativeSteps: Array<[number, number]> = [];
                    const curves: Array<Record<number, number>> = [];
                    const draftMilliseconds: number[] = [];
                    const specgateArm = async (prompt: string, seed: number, tokens = maxTokens) => {
                        const result = await generate(
                            presented(target),
                            speculative ? presented(draft) : undefined,
                            promptTokensOf(target, prompt),
                            options(seed, tokens)
                        );
                        return result.telemetry;
                    };
                    const nativeArm = async (prompt: string, seed: number, tokens = maxTokens) => {
                        if (!speculative) {
                            const result = await server.complete(promptTokensOf(target, prompt), temperature, tokens, seed);
                            return {
                                tokensPerSecond: result.tokensPerSecond,
                                decoded: result.predicted,
                                promptTokens: Number.NaN,
                                drafted: Number.NaN,
                                accepted: Number.NaN,
                                command: ""
                            };
                        }
                        return runSpeculativeSimple({
                            target: benchCase.target,
                            draft: benchCase.draft,
                            prompt,
                            threads,
                            contextSize,
                            temperature,
                            tokens,
                            seed
                        });
                    };
                    // Warm-up of both arms (page cache, thread pools, the server's slot).
                    await specgateArm(benchCase.prompts[0], 0, 8);
                    await nativeArm(benchCase.prompts[0], 0, 8);
                    for (let rep = 0; rep < repsOf(benchCase); rep++) {
                        const prompt = benchCase.prompts[rep % benchCase.prompts.length];
                        const seed = rep + 1;
                        let telemetry: Awaited<ReturnType<typeof specgateArm>> | undefined;
                        let nativeResult: Awaited<ReturnType<typeof nativeArm>> | undefined;
                        if (rep % 2 === 0) {
                            telemetry = await specgateArm(prompt, seed);
                            nativeResult = await nativeArm(prompt, seed);
                        } else {
                            nativeResult = await nativeArm(prompt, seed);
                            telemetry = await specgateArm(prompt, seed);
                        }
                        row.specgate.push(telemetry.tokensPerSecond);
                        row.native.push(nativeResult.tokensPerSecond);
                        row.ratios.push(telemetry.tokensPerSecond / nativeResult.tokensPerSecond);
                        specgateSteps.push([telemetry.emittedTokens, telemetry.steps]);
                        curves.push(telemetry.costCurve());
                        if (telemetry.toJSON().draftTokenMilliseconds != null)
                            draftMilliseconds.push(telemetry.toJSON().draftTokenMilliseconds!);
                        if (speculative) {
                            // Each target step emits its accepted drafts + 1: steps = decoded − accepted.
                            nativeSteps.push([nativeResult.decoded, nativeResult.decoded - nativeResult.accepted]);
                            if (nativeResult.promptTokens !== telemetry.promptTokens) row.promptMismatches++;
                            row.nativeCommand = nativeResult.command;
                        }
                    }
                    const perStep = (entries: Array<[number, number]>) =>
                        entries.reduce((sum, [tokens]) => sum + tokens, 0) / entries.reduce((sum, [, steps]) => sum + steps, 0);
                    row.specgateTokensPerStep = perStep(specgateSteps);
                    row.nativeTokensPerStep = speculative ? perStep(nativeSteps) : 1;
                    if (!speculative)
                        row.nativeCommand = `${server.command}\` + \`POST /completion ${JSON.stringify({prompt: "<token ids>", n_predict: maxTokens, ...serverSampling(temperature, 1), cache_prompt: true})}`;
                    const sizes = [...new Set(curves.flatMap((curve) => Object.keys(curve).map(Number)))];
                    row.specgateCostCurve = Object.fromEntries(sizes.map((size) => [size, median(curves.map((curve) => curve[size]))]));
                    row.specgateDraftMilliseconds = draftMilliseconds.length > 0 ? median(draftMilliseconds) : null;
                    pairs.push(row);
                    await writeFile(`${jsonPath}.partial`, `${JSON.stringify({pairs}, null, 1)}\n`);
                    log(
                        `${name} T=${temperature} t=${threads} ${mode}: specgate ${fixed(median(row.specgate), 1)} tok/s, native ${fixed(median(row.native), 1)} tok/s, ratio ${fixed(median(row.ratios), 3)}`
                    );
                }
            }

            // Secondary: llama.cpp's ngram drafting beside specgate's ngram drafter (family target, 1 thread, T = 0).
            if (withNgram && name === "family" && threads === 1) {
                const specgateNgram = async (prompt: string, seed: number) =>
                    (
                        await generate(presented(target), undefined, promptTokensOf(target, prompt), {
                            policy: {kind: "strict"},
                            drafter: "ngram",
                            gamma,
                            sampling: {temperature: 0, topK: 0, topP: 1, minP: 0},
                            maxTokens,
                            seed
                        })
                    ).telemetry;
                const nativeNgram = (prompt: string, seed: number) =>
                    runSpeculativeSimple({
                        target: benchCase.target,
                        specType: "ngram-simple",
                        prompt,
                        threads,
                        contextSize,
                        temperature: 0,
                        tokens: maxTokens,
                        seed
                    });
                const ngram = {
                    temperature: 0,
                    specgate: [] as number[],
                    native: [] as number[],
                    specgateTokensPerStep: Number.NaN,
                    nativeTokensPerStep: Number.NaN,
                    nativeCommand: ""
                };
                const specgateSteps: Array<[number, number]> = [];
                const nativeSteps: Array<[number, number]> = [];
                try {
                    for (let rep = 0; rep < repsOf(benchCase); rep++) {
                        const prompt = benchCase.prompts[rep % benchCase.prompts.length];
                        const telemetry = await specgateNgram(prompt, rep + 1);
                        const nativeResult = await nativeNgram(prompt, rep + 1);
                        ngram.specgate.push(telemetry.tokensPerSecond);
                        ngram.native.push(nativeResult.tokensPerSecond);
                        specgateSteps.push([telemetry.emittedTokens, telemetry.steps]);
                        // ngram-simple drafts are variable-length: steps = decoded − accepted.
                        nativeSteps.push([nativeResult.decoded, nativeResult.decoded - nativeResult.accepted]);
                        ngram.nativeCommand = nativeResult.command;
                    }
                    const perStep = (entries: Array<[number, number]>) =>
                        entries.reduce((sum, [tokens]) => sum + tokens, 0) / entries.reduce((sum, [, steps]) => sum + steps, 0);
                    ngram.specgateTokensPerStep = perStep(specgateSteps);
                    ngram.nativeTokensPerStep = perStep(nativeSteps);
                    ngramRows.push(ngram);
                    log(
                        `ngram: specgate ${fixed(median(ngram.specgate), 1)} tok/s, llama.cpp ngram-simple ${fixed(median(ngram.native), 1)} tok/s`
                    );
                } catch (error) {
                    log(`ngram comparison skipped: ${(error as Error).message.split("\n")[0]}`);
                }
            }

            // Time split at T = 0.8, 1 thread, on the V = 152,000 pair.
            if (!scalingOnly && name === "v152k" && threads === 1 && temperatures.includes(0.8)) {
                for (const spec of ["target-only", "strict", "fuzzy:js:0.4", "calibrated"]) {
                    const splits: Array<Record<string, number>> = [];
                    for (let rep = 0; rep < Math.max(2, Math.min(reps, 3)); rep++) {
                        const targetRecord: EvaluationRecord[] = [];
                        const draftRecord: EvaluationRecord[] = [];
                        const begin = performance.now();
                        const result = await generate(
                            presented(target, targetRecord),
                            spec === "target-only" ? undefined : presented(draft, draftRecord),
                            promptTokensOf(target, benchCase.prompts[rep % benchCase.prompts.length]),
                            {
                                policy: parsePolicySpec(spec === "target-only" ? "strict" : spec),
                                gamma: spec === "target-only" ? 0 : gamma,
                                sampling: {temperature: 0.8, topK: 0, topP: 1, minP: 0},
                                maxTokens,
                                seed: rep + 1
                            }
                        );
                        const time = result.telemetry.time;
                        // Evaluations that started after the prompt phase (target prompt and the drafter's start).
                        const promptEnd = begin + time.prompt;
                        const decodeCalls = (record: EvaluationRecord[]) => record.filter((entry) => entry.start >= promptEnd);
                        const sum = (record: EvaluationRecord[], key: keyof EvaluationRecord) =>
                            decodeCalls(record).reduce((total, entry) => total + entry[key], 0);
                        const decodeWall = time.total - time.prompt;
                        const llamaDecode = sum(targetRecord, "decode") + sum(draftRecord, "decode");
                        const transfer = sum(targetRecord, "transfer") + sum(draftRecord, "transfer");
                        const callWall = sum(targetRecord, "wall") + sum(draftRecord, "wall");
                        const nativeSampling = sum(targetRecord, "sampling") + sum(draftRecord, "sampling");
                        // Sampler rows: natively inside the evaluation calls, plus what generate() books as sampling in JS.
                        const sampling = nativeSampling + time.sampling;
                        // Drafting outside the draft model's calls: sampling the draft rows, proposal bookkeeping.
                        const draftLogic = Math.max(0, time.draft - sum(draftRecord, "wall"));
                        splits.push({
                            decodeMsPerToken: decodeWall / result.telemetry.emittedTokens,
                            tokensPerSecond: result.telemetry.tokensPerSecond,
                            llamaDecode: llamaDecode / decodeWall,
                            transfer: transfer / decodeWall,
                            callGlue: (callWall - llamaDecode - transfer - nativeSampling) / decodeWall,
                            sampling: sampling / decodeWall,
                            policyShare: time.policy / decodeWall,
                            draftLogic: draftLogic / decodeWall,
                            rest: Math.max(0, decodeWall - callWall - time.sampling - time.policy - draftLogic) / decodeWall,
                            transferSamplingPolicy: (transfer + sampling + time.policy + draftLogic) / decodeWall,
                            notLlamaDecode: 1 - llamaDecode / decodeWall,
                            tokensPerStep: result.telemetry.emittedTokens / result.telemetry.steps
                        });
                    }
                    const keys = Object.keys(splits[0]);
                    timeSplit.push({...Object.fromEntries(keys.map((key) => [key, median(splits.map((split) => split[key]))])), spec});
                    log(
                        `time split ${spec}: transfer + sampling + policy ${fixed(100 * (timeSplit.at(-1)!.transferSamplingPolicy as number), 1)}%, everything but llama_decode ${fixed(100 * (timeSplit.at(-1)!.notLlamaDecode as number), 1)}% of decode time`
                    );
                }
            }

            // Single-token decode per call on the family target (1 thread): evaluateArgmax of 1 token + rollback,
            // in blocks interleaved with llama-bench's own single-token decode (-p 0 -n 256) on the same file.
            if (!scalingOnly && name === "family" && threads === 1) {
                const sequence = await target.createSequence();
                await sequence.evaluate(promptTokensOf(target, benchCase.prompts[0]), {positions: []});
                const callsPerBlock = quick ? 200 : 1000;
                const blocks = quick ? 2 : 5;
                const specgateBlocks: number[] = [];
                const benchBlocks: number[] = [];
                const before = {...sequence.timings};
                let benchCommand = "";
                for (let block = 0; block < blocks; block++) {
                    const begin = performance.now();
                    for (let call = 0; call < callsPerBlock; call++) {
                        await sequence.evaluateArgmax([65], {positions: [0]});
                        await sequence.rollback(1);
                    }
                    specgateBlocks.push((performance.now() - begin) / callsPerBlock);
                    const args = ["-m", benchCase.target, "-p", "0", "-n", "256", "-t", "1", "-r", "3", "-o", "json"];
                    const {output} = await runTool("llama-bench", args);
                    const parsed = JSON.parse(output.slice(output.indexOf("["), output.lastIndexOf("]") + 1)) as Array<{avg_ts: number}>;
                    benchBlocks.push(1000 / parsed[0].avg_ts);
                    benchCommand = commandLine([join(binDirectory, "llama-bench"), ...args]);
                }
                const evaluations = sequence.timings.evaluations - before.evaluations;
                singleToken = {
                    calls: evaluations,
                    msPerCall: median(specgateBlocks),
                    llamaDecodeMsPerCall: (sequence.timings.decodeMilliseconds - before.decodeMilliseconds) / evaluations,
                    transferMsPerCall: (sequence.timings.transferMilliseconds - before.transferMilliseconds) / evaluations,
                    llamaBenchMsPerToken: median(benchBlocks),
                    blocks,
                    llamaBenchCommand: benchCommand
                };
                await sequence.dispose();
                log(
                    `single-token decode: ${fixed(singleToken.msPerCall as number, 4)} ms per call; llama-bench ${fixed(singleToken.llamaBenchMsPerToken as number, 4)} ms per token`
                );
            }
        } finally {
            await server.stop();
            await draft.dispose();
            await target.dispose();
        }
    }
}

neighbour?.kill("SIGKILL");

// ---------------------------------------------------------------------------------------------
// Report

const find = (caseName: string, temperature: number, threads: number, mode: string) =>
    pairs.find((row) => row.case === caseName && row.temperature === temperature && row.threads === threads && row.mode === mode);
const lines: string[] = [];
lines.push(
    `Machine: ${machine.cores}-core ${machine.cpu}${machine.avx512 ? " (AVX-512)" : ""}, ${machine.platform}, Node ${machine.node}; llama.cpp ${llamaCommit}.`
);
lines.push(`Instruction set: ${machine.instructionSet.join(", ") || "none of AVX2 / AVX-512 listed"}. ggml: ${machine.ggmlSystemInfo}`);
if (fixedThreads) lines.push("specgate ran with adaptiveThreads off (--fixed-threads): always the requested threads.");
if (contention)
    lines.push(
        `Contention: \`${busyCommand.map(shellQuote).join(" ")}\` kept core ${busyCore} busy for the whole run: both arms of every pair ran beside it.`
    );
lines.push(
    `Load average (1 min) at start ${fixed(loadAtStart[0])}, at end ${fixed(loadavg()[0])} on ${machine.cores} cores: other processes shared the machine.`
);
lines.push(
    `Date: ${started.toISOString()}. Repetitions: ${reps} per cell (family: ${3 * reps}) (arms interleaved, first arm alternating), ${maxTokens} tokens each, EOS ignored. ` +
        `llama-speculative-simple runs repeated for lost summary lines: ${speculativeSimpleRetries}.`
);
lines.push("");
lines.push(
    "| case | T | threads | mode | specgate tok/s | native tok/s | specgate / native | tokens per step (specgate, native) | speed-up over target-only (specgate, native) | analytic limit |"
);
lines.push("|---|---|---|---|---|---|---|---|---|---|");
for (const row of pairs) {
    const speculative = row.mode !== "target-only";
    const base = find(row.case, row.temperature, row.threads, "target-only");
    let speedups = "–";
    let limit = "–";
    if (speculative && base != null) {
        speedups = `${formatInterval(medianRatioInterval(row.specgate, base.specgate), 2, "×")}, ${formatInterval(medianRatioInterval(row.native, base.native), 2, "×")}`;
        // Zero-overhead speed-up at specgate's measured acceptance and costs: tokens per step · t(1) / (t(γ+1) + γ · t_draft).
        const t1 = base.specgateCostCurve?.[1];
        const tBatch = row.specgateCostCurve?.[gamma + 1];
        if (t1 != null && tBatch != null && row.specgateDraftMilliseconds != null)
            limit = `${fixed((row.specgateTokensPerStep * t1) / (tBatch + gamma * row.specgateDraftMilliseconds))}×`;
    }
    const perStep = speculative ? `${fixed(row.specgateTokensPerStep)}, ${fixed(row.nativeTokensPerStep)}` : "1, 1";
    lines.push(
        `| ${row.case} | ${row.temperature} | ${row.threads} | ${row.mode} | ${fixed(median(row.specgate), 1)} | ${fixed(median(row.native), 1)} | **${formatInterval(medianInterval(row.ratios), 3)}** | ${perStep} | ${speedups} | ${limit} |`
    );
}
lines.push("");
lines.push("Thread scaling (target-only tok/s at 2 threads / 1 thread; 'relative' = specgate's scaling / native's):");
lines.push("");
lines.push("| case | T | specgate | native (llama-server) | relative | llama-bench |");
lines.push("|---|---|---|---|---|---|");
const scaling: Array<Record<string, number | string>> = [];
if (threadCounts.includes(1) && threadCounts.includes(2)) {
    for (const caseName of caseNames)
        for (const temperature of temperatures) {
            const one = find(caseName, temperature, 1, "target-only");
            const two = find(caseName, temperature, 2, "target-only");
            if (one == null || two == null) continue;
            const specgate = median(two.specgate) / median(one.specgate);
            const native = median(two.native) / median(one.native);
            const benchRows = llamaBench[caseName]?.rows ?? [];
            const bench =
                (benchRows.find((entry) => entry.threads === 2)?.tokensPerSecond ?? Number.NaN) /
                (benchRows.find((entry) => entry.threads === 1)?.tokensPerSecond ?? Number.NaN);
            scaling.push({case: caseName, temperature, specgate, native, relative: specgate / native, llamaBench: bench});
            lines.push(
                `| ${caseName} | ${temperature} | ${fixed(specgate)}× | ${fixed(native)}× | **${fixed(specgate / native, 3)}** | ${fixed(bench)}× |`
            );
        }
}
lines.push("");
lines.push("llama-bench decode (-p 0 -n 128), tok/s:");
lines.push("");
for (const [caseName, result] of Object.entries(llamaBench))
    lines.push(
        `- ${caseName}: ${result.rows.map((entry) => `${entry.threads} thread${entry.threads > 1 ? "s" : ""} ${fixed(entry.tokensPerSecond, 1)} ± ${fixed(entry.stddev, 1)}`).join(", ")}`
    );
if (singleToken != null) {
    lines.push("");
    lines.push(
        `Single-token decode on the family target, 1 thread (NativeBackend evaluateArgmax of 1 token + rollback, ${singleToken.calls} calls in ${singleToken.blocks} blocks, ` +
            `each followed by \`${singleToken.llamaBenchCommand}\`): **specgate ${fixed(singleToken.msPerCall as number, 4)} ms per call** ` +
            `(llama_decode ${fixed(singleToken.llamaDecodeMsPerCall as number, 4)} ms, argmax ${fixed(singleToken.transferMsPerCall as number, 4)} ms, the rest is the call); ` +
            `llama-bench ${fixed(singleToken.llamaBenchMsPerToken as number, 4)} ms per token; ratio ${fixed((singleToken.msPerCall as number) / (singleToken.llamaBenchMsPerToken as number), 3)}.`
    );
}
if (timeSplit.length > 0) {
    lines.push("");
    lines.push(
        `specgate's decode-time split at T = 0.8 on the V = 152,000 pair, 1 thread, γ = ${gamma} (median of runs; shares of decode wall time):`
    );
    lines.push("");
    lines.push(
        "| policy | tokens / step | ms / token | llama_decode | row transfer | call glue | sampling rows (native + JS) | policy | drafting outside the draft model | rest | transfer + sampling + policy | everything but llama_decode |"
    );
    lines.push("|---|---|---|---|---|---|---|---|---|---|---|---|");
    const percent = (number: number | string) => `${fixed(100 * (number as number), 1)}%`;
    for (const split of timeSplit)
        lines.push(
            `| ${split.spec} | ${fixed(split.tokensPerStep as number)} | ${fixed(split.decodeMsPerToken as number, 2)} | ${percent(split.llamaDecode)} | ${percent(split.transfer)} | ${percent(split.callGlue)} | ${percent(split.sampling)} | ${percent(split.policyShare)} | ${percent(split.draftLogic)} | ${percent(split.rest)} | **${percent(split.transferSamplingPolicy)}** | ${percent(split.notLlamaDecode)} |`
        );
}
if (ngramRows.length > 0) {
    lines.push("");
    lines.push(
        `n-gram drafting on the family target, T = 0, 1 thread, γ = ${gamma} (different lookup rules: specgate \`ngram\` matches the longest of the last 4..2 tokens in the context; llama.cpp \`ngram-simple\` the last 3, \`--spec-ngram-simple-size-n 3 --spec-ngram-simple-size-m 4\`):`
    );
    lines.push("");
    lines.push("| | specgate --drafter ngram | llama-speculative-simple --spec-type ngram-simple | ratio |");
    lines.push("|---|---|---|---|");
    for (const row of ngramRows)
        lines.push(
            `| tok/s (tokens per step) | ${fixed(median(row.specgate), 1)} (${fixed(row.specgateTokensPerStep)}) | ${fixed(median(row.native), 1)} (${fixed(row.nativeTokensPerStep)}) | ${fixed(median(row.specgate) / median(row.native), 3)} |`
        );
}

lines.push("");
lines.push("Commands (native arms; paths relative to the repository):");
lines.push("");
for (const caseName of caseNames) {
    const examples = [
        ...new Map(
            pairs
                .filter((row) => row.case === caseName && row.threads === threadCounts[0] && row.temperature === temperatures[0])
                .map((row) => [row.mode, row.nativeCommand])
        ).values()
    ];
    lines.push(`- ${caseName}: \`${llamaBench[caseName]?.command ?? ""}\``);
    for (const command of examples) lines.push(`  - \`${command}\``);
}
if (ngramRows.length > 0) lines.push(`- ngram: \`${ngramRows[0].nativeCommand}\``);

// Targets.
const targets: Array<{target: string; measured: string; met: boolean}> = [];
const ratioOf = (caseName: string, temperature: number, threads: number, mode: string) => {
    const row = find(caseName, temperature, threads, mode);
    return row == null ? Number.NaN : median(row.ratios);
};
for (const temperature of [0, 0.8]) {
    const ratio = ratioOf("v152k", temperature, 1, "target-only");
    if (Number.isFinite(ratio))
        targets.push({
            target: `target-only ≥ 0.95× native, V = 152k, T = ${temperature}, 1 thread`,
            measured: `${fixed(ratio, 3)}×`,
            met: ratio >= 0.95
        });
}
for (const entry of scaling.filter((item) => item.case === "v152k"))
    targets.push({
        target: `2-thread scaling ≥ 0.9× native's, V = 152k, T = ${entry.temperature}`,
        measured: `${fixed(entry.relative as number, 3)}×`,
        met: (entry.relative as number) >= 0.9
    });
for (const caseName of ["family", "d768"])
    for (const threads of threadCounts) {
        const ratio = ratioOf(caseName, 0, threads, `strict γ=${gamma}`);
        if (Number.isFinite(ratio))
            targets.push({
                target: `strict γ = 4 ≥ 0.95× llama-speculative-simple, ${caseName}, T = 0, ${threads} thread${threads > 1 ? "s" : ""}`,
                measured: `${fixed(ratio, 3)}×`,
                met: ratio >= 0.95
            });
    }
if (contention)
    for (const row of pairs.filter((item) => item.threads === 2 && item.mode === "target-only"))
        targets.push({
            target: `one core busy: specgate 2 threads ≥ 0.9× llama-server 2 threads, ${row.case}, T = ${row.temperature}`,
            measured: `${fixed(median(row.ratios), 3)}×`,
            met: median(row.ratios) >= 0.9
        });
for (const split of timeSplit.filter((item) => item.spec !== "target-only"))
    targets.push({
        target: `transfer + sampling + policy ≤ 10% of decode, ${split.spec}, V = 152k, T = 0.8`,
        measured: `${fixed(100 * (split.transferSamplingPolicy as number), 1)}% (all but llama_decode: ${fixed(100 * (split.notLlamaDecode as number), 1)}%)`,
        met: (split.transferSamplingPolicy as number) <= 0.1
    });
if (singleToken != null)
    targets.push({
        target: "single-token decode on the family target ≤ 0.15 ms per call",
        measured: `${fixed(singleToken.msPerCall as number, 4)} ms`,
        met: (singleToken.msPerCall as number) <= 0.15
    });
lines.push("");
lines.push("| target | measured | met |");
lines.push("|---|---|---|");
for (const entry of targets) lines.push(`| ${entry.target} | ${entry.measured} | ${entry.met ? "yes" : "**no**"} |`);

process.stdout.write(`${lines.join("\n")}\n`);
await mkdir(dirname(resolve(jsonPath)), {recursive: true});
await writeFile(
    jsonPath,
    `${JSON.stringify(
        {
            date: started.toISOString(),
            finished: new Date().toISOString(),
            machine,
            loadAverage: {start: loadAtStart, end: loadavg()},
            contention: contention ? {core: busyCore, command: busyCommand.join(" ")} : null,
            adaptiveThreads: !fixedThreads,
            llamaCommit,
            settings: {reps, maxTokens, threadCounts, temperatures, gamma, cases: caseNames.map((caseName) => cases[caseName])},
            pairs: pairs.map((row) => ({
                ...row,
                specgateMedian: median(row.specgate),
                nativeMedian: median(row.native),
                ratioMedian: median(row.ratios)
            })),
            scaling,
            llamaBench,
            singleToken,
            timeSplit,
            ngram: ngramRows,
            targets,
            speculativeSimpleRetries
        },
        null,
        2
    )}\n`
);
log(`wrote ${jsonPath}`);
