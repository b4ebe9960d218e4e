/**
 * The device-machine benchmark's driver (issue #29 item 5; bench/device/README.md). Bundled by
 * bench/device/prepare.sh into one .mjs file and run by bench/device/run.sh with the carried Node.
 *
 *   deviceBench fixtures --root R --fixtures DIR --cases twin-1b,twin-7b,family,d768,v152k,b1 [--quick]
 *       writes the widened twins of the family target (`specgate fixtures --widen-from`) and the
 *       random-weight GGUF pairs (the writer of `specgate fixtures`); family is models/.
 *   deviceBench bench --root R --fixtures DIR --bin LLAMA_BIN --gpu cuda|vulkan|off --out DIR
 *       [--cases …] [--deadline EPOCH_S] [--reps N] [--tokens N] [--threads N] [--temperatures 0,…] [--quick]
 *
 * For each case three arms, each one pair of specgate and llama.cpp on the same GGUF files and the
 * same ggml backend (llama.cpp built from the same source, specgate's addon linked to those very
 * libraries), interleaved one repetition at a time with the first arm alternating:
 *
 *   target-only             generate() with γ = 0                 llama-bench -p 0 -n N -r 1 -ngl 99
 *   strict γ=4 model        generate() with the draft model       llama-speculative-simple --spec-type draft-simple
 *                                                                  --spec-draft-n-max 4 --spec-draft-n-min 0 --spec-draft-p-min 0 -ngl 99 -ngld 99
 *   strict γ=4 ngram        generate() with drafter ngram:3:3     llama-speculative-simple --spec-type ngram-simple
 *                                                                  --spec-ngram-simple-size-n 3 --spec-ngram-simple-size-m 4 -ngl 99
 *   strict γ=4 eagle3 head  generate() with the EAGLE-3 head      llama-speculative-simple --spec-type draft-eagle3 -md HEAD
 *                           (cases with a head: family, --head;   --spec-draft-n-max 4 --spec-draft-n-min 0 --spec-draft-p-min 0 -ngl 99 -ngld 99
 *                           --eagle3-drafts sample|greedy)
 *
 * EOS is ignored on both sides (every generation runs to its budget); sampling T (default 0), top-k 0,
 * top-p 1, min-p 0. Repetitions stop early at --deadline (each remaining arm gets an equal share of
 * the time left), so the report is always written. Output: OUT/device-bench.md and OUT/device-bench.json.
 */
import {spawnSync} from "node:child_process";
import {existsSync, readFileSync} from "node:fs";
import {mkdir, writeFile} from "node:fs/promises";
import {cpus, loadavg} from "node:os";
import {dirname, join, resolve} from "node:path";
import {Eagle3HeadBackend} from "../../src/backend/Eagle3HeadBackend.js";
import {NativeBackend} from "../../src/backend/NativeBackend.js";
import {nativeAddon} from "../../src/backend/nativeAddon.js";
import {defaultBenchPrompts} from "../../src/benchRunner/defaultPrompts.js";
import {generate} from "../../src/engine/generate.js";
import {parseTreeShape, treeShapeLabel} from "../../src/engine/drafters/TreeDraftSession.js";
import type {GenerationTelemetry} from "../../src/engine/GenerationTelemetry.js";
import {GgmlTensorType} from "../../src/gguf/GgmlTensorType.js";
import {letterPieces} from "../../src/gguf/letterPieces.js";
import {writeRandomLlamaPair} from "../../src/gguf/randomLlamaModel.js";
import {widenLlamaModel} from "../../src/gguf/widenLlamaModel.js";
import {cpuInstructionSet} from "../cpuInstructionSet.js";
import {compareEagle3, type Eagle3Comparison, eagle3ComparisonLines} from "./eagle3Comparison.js";
import {formatInterval, median, medianInterval, medianRatioInterval, type SpeedInterval} from "../speedIntervals.js";
import {
    draftModelFlags,
    nativeSamplerFlags,
    ngramDraftFlags,
    runSpeculativeSimpleUntilSummary,
    runTool as runLlamaCppTool,
    shellQuote
} from "../llamaCppTools.js";
import {type BatchedPair, measureStreams, parseGammaArms, type StreamsRow, type StreamsSettings, streamsLines} from "./streamsBench.js";

// ---------------------------------------------------------------------------------------------
// Settings

const [command = "bench", ...argv] = process.argv.slice(2);
const value = (name: string): string | undefined => {
    const index = argv.indexOf(name);
    return index >= 0 ? argv[index + 1] : undefined;
};
const flag = (name: string): boolean => argv.includes(name);
const quick = flag("--quick");
const root = resolve(value("--root") ?? ".");
const fixtureDirectory = resolve(value("--fixtures") ?? join(root, ".specgate/device-fixtures"));
/** Default cases: the twins a GPU is for, or (--gpu off) those a 2-core CPU can time in minutes. */
const caseNames = (value("--cases") ?? (value("--gpu") === "off" ? "twin-0.1b,twin-1b" : "twin-1b,twin-7b,family"))
    .split(",")
    .filter((name) => name !== "");
const gamma = 4;

type Shape = [embedding: number, layers: number, heads: number, feedForward: number];
interface FixtureSpec {
    target: Shape;
    draft: Shape;
    type: "F32" | "F16";
    context: number;
    vocabularySize: number;
}
/** A widened twin (src/gguf/widenLlamaModel.ts) of a tracked model: its function at the cost of `shape`. */
interface TwinSpec {
    /** The source, relative to --root. */
    source: string;
    shape: Shape;
    type: "F16" | "Q8_0";
}
interface BenchCase {
    name: string;
    label: string;
    target: string;
    draft: string;
    prompts: readonly string[];
    fixture?: FixtureSpec;
    /** The target is a twin of the family target; `draftTwin`: the draft is a twin of the family draft. */
    twin?: TwinSpec;
    draftTwin?: TwinSpec;
    /** An EAGLE-3 head trained for the target (the eagle3 arm runs where it exists). */
    head?: string;
}

/** The family target's EAGLE-3 head: --head, else the shipped models/eagle3/model.gguf. */
const familyHead = resolve(root, value("--head") ?? "models/eagle3/model.gguf");

/**
 * Twins of the family target (head size 32), drafted by the family's own draft so acceptance is the
 * trained pair's: twin-0.1b (d768×8, FF 2048: 0.06B parameters) and twin-1b (d2048×16, FF 5632:
 * 0.82B) for CPUs, twin-1b and twin-7b (d4096×32, FF 11008: 6.5B) for GPUs; F16, or Q8_0 with the
 * suffix -q8; -wdraft: the family draft widened too (d512×4 for twin-1b, d256×2 for twin-0.1b), which
 * sets the draft's cost ratio. Files are named by shape and type, so cases share them.
 */
function twinBenchCases(familyPrompts: () => string[]): Record<string, BenchCase> {
    const targetSource = "models/target/model.gguf";
    const draftSource = "models/draft/model.gguf";
    const shapeName = ([embedding, layers]: Shape, type: string) => `d${embedding}x${layers}-${type.toLowerCase()}`;
    const fileOf = (prefix: string, spec: TwinSpec) =>
        join(fixtureDirectory, "twins", `${prefix}-${shapeName(spec.shape, spec.type)}.gguf`);
    const sizes: Record<string, {target: Shape; quickTarget: Shape; draft: Shape; quickDraft: Shape; parameters: string}> = {
        "twin-0.1b": {
            target: [768, 8, 24, 2048],
            quickTarget: [256, 4, 8, 768],
            draft: [256, 2, 8, 768],
            quickDraft: [128, 2, 4, 384],
            parameters: "0.06B"
        },
        "twin-1b": {
            target: [2048, 16, 64, 5632],
            quickTarget: [512, 4, 16, 1408],
            draft: [512, 4, 16, 1408],
            quickDraft: [128, 2, 4, 384],
            parameters: "0.82B"
        },
        "twin-7b": {
            target: [4096, 32, 128, 11008],
            quickTarget: [768, 4, 24, 2048],
            draft: [512, 4, 16, 1408],
            quickDraft: [128, 2, 4, 384],
            parameters: "6.5B"
        }
    };
    const cases: Record<string, BenchCase> = {};
    for (const [base, size] of Object.entries(sizes))
        for (const type of ["F16", "Q8_0"] as const)
            for (const widenedDraft of [false, true]) {
                const name = `${base}${type === "Q8_0" ? "-q8" : ""}${widenedDraft ? "-wdraft" : ""}`;
                const twin: TwinSpec = {source: targetSource, shape: quick ? size.quickTarget : size.target, type};
                const draftTwin: TwinSpec | undefined = widenedDraft
                    ? {source: draftSource, shape: quick ? size.quickDraft : size.draft, type}
                    : undefined;
                const [embedding, layers, heads, feedForward] = twin.shape;
                cases[name] = {
                    name,
                    label:
                        `twin of the family target at d${embedding}×${layers}, ${heads} heads of 32, FF ${feedForward}` +
                        `${quick ? " (REDUCED for --quick)" : ` (${size.parameters} parameters)`}, ${type}; ` +
                        (draftTwin == null ? "family draft" : `family draft widened to d${draftTwin.shape[0]}×${draftTwin.shape[1]}`),
                    target: fileOf("target", twin),
                    draft: draftTwin == null ? join(root, draftSource) : fileOf("draft", draftTwin),
                    get prompts() {
                        return familyPrompts();
                    },
                    twin,
                    ...(draftTwin == null ? {} : {draftTwin})
                };
            }
    return cases;
}

/** The cases: the shipped family pair, bench/nativeComparison.ts's d768 and v152k pairs, and a ≈1B-parameter F16 pair. */
function benchCases(): Record<string, BenchCase> {
    const familyPrompts = () =>
        readFileSync(join(root, "examples/family-prompts.jsonl"), "utf8")
            .split("\n")
            .filter((line) => line.trim() !== "")
            .map((line) => (JSON.parse(line) as {prompt: string}).prompt);
    const generated = (name: string, label: string, fixture: FixtureSpec): BenchCase => ({
        name,
        label,
        target: join(fixtureDirectory, name, "target.gguf"),
        draft: join(fixtureDirectory, name, "draft.gguf"),
        prompts: defaultBenchPrompts,
        fixture
    });
    // ≈1B: d2048 × 16 layers, 16 heads, FF 5632, V = 32,000: 0.82B in the blocks + 0.13B embeddings and
    // output = 0.95B parameters, 1.9 GB in F16; the draft is its d512 × 4 slice (head size 128 kept).
    const b1: FixtureSpec = quick
        ? {target: [512, 4, 8, 1408], draft: [128, 1, 2, 352], type: "F16", context: 1024, vocabularySize: 32000}
        : {target: [2048, 16, 16, 5632], draft: [512, 4, 4, 1408], type: "F16", context: 1024, vocabularySize: 32000};
    const twinCases = twinBenchCases(familyPrompts);
    return {
        ...twinCases,
        family: {
            name: "family",
            label: "family pair (d128×4 target, d64 draft, 260 tokens, F32)",
            target: join(root, "models/target/model.gguf"),
            draft: join(root, "models/draft/model.gguf"),
            head: familyHead,
            get prompts() {
                return familyPrompts();
            }
        },
        d768: generated("d768", "d768×8 F32 target, d256×2 draft", {
            target: [768, 8, 12, 2048],
            draft: [256, 2, 4, 768],
            type: "F32",
            context: 512,
            vocabularySize: 260
        }),
        v152k: generated("v152k", "V = 152,000: d256×4 F32 target, d64×1 draft", {
            target: [256, 4, 4, 1024],
            draft: [64, 1, 1, 192],
            type: "F32",
            context: 512,
            vocabularySize: 152000
        }),
        b1: generated(
            "b1",
            quick
                ? "≈1B F16 pair, REDUCED for --quick: d512×4 target, d128×1 draft, V = 32,000"
                : "≈1B F16: d2048×16 target (0.95B parameters, FF 5632), d512×4 draft, V = 32,000",
            b1
        )
    };
}

const log = (text: string): void => void process.stderr.write(`[deviceBench ${new Date().toISOString().slice(11, 19)}] ${text}\n`);
const fixed = (number: number | undefined | null, digits = 2): string =>
    number == null || !Number.isFinite(number) ? "–" : number.toFixed(digits);

// ---------------------------------------------------------------------------------------------
// fixtures

async function writeFixtures(): Promise<void> {
    const cases = benchCases();
    for (const name of caseNames) {
        const benchCase = cases[name];
        if (benchCase == null) throw new Error(`unknown case ${name}; expected one of ${Object.keys(cases).join(", ")}`);
        if (existsSync(benchCase.target) && existsSync(benchCase.draft)) continue;
        const started = performance.now();
        if (benchCase.twin != null) {
            if (!existsSync(benchCase.target)) await writeTwin(benchCase.target, benchCase.twin);
            if (benchCase.draftTwin != null && !existsSync(benchCase.draft)) await writeTwin(benchCase.draft, benchCase.draftTwin);
            log(`wrote ${name} (${benchCase.label}) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
            continue;
        }
        const fixture = benchCase.fixture;
        if (fixture == null) continue;
        const shape = ([embeddingLength, blockCount, headCount, feedForwardLength]: Shape) => ({
            embeddingLength,
            blockCount,
            headCount,
            headCountKv: headCount,
            feedForwardLength,
            contextLength: fixture.context
        });
        const directory = join(fixtureDirectory, name);
        await mkdir(directory, {recursive: true});
        await writeRandomLlamaPair({
            directory,
            seed: 1,
            weightType: fixture.type === "F16" ? GgmlTensorType.F16 : GgmlTensorType.F32,
            target: shape(fixture.target),
            draft: shape(fixture.draft),
            pieces: letterPieces(fixture.vocabularySize - 260)
        });
        log(`wrote ${name} (${benchCase.label}) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
    process.stdout.write(`fixtures ready in ${fixtureDirectory}\n`);
}

async function writeTwin(outputPath: string, twin: TwinSpec): Promise<void> {
    const [embeddingLength, blockCount, headCount, feedForwardLength] = twin.shape;
    await mkdir(dirname(outputPath), {recursive: true});
    await widenLlamaModel({
        source: join(root, twin.source),
        shape: {embeddingLength, blockCount, headCount, feedForwardLength},
        weightType: twin.type === "F16" ? GgmlTensorType.F16 : GgmlTensorType.Q8_0,
        outputPath
    });
}

// ---------------------------------------------------------------------------------------------
// llama.cpp's tools

const binDirectory = resolve(value("--bin") ?? join(root, "native/build/baselines/bin"));
const gpu = (value("--gpu") ?? "cuda") as "cuda" | "vulkan" | "off";
const onGpu = gpu !== "off";
const threads = Number(value("--threads") ?? (onGpu ? 4 : 1));
const gpuLayerFlags = onGpu ? ["-ngl", "99"] : [];
const commandLine = (binary: string, args: readonly string[]): string => [binary, ...args].map(shellQuote).join(" ");

function runTool(binary: string, args: readonly string[], timeoutMilliseconds = 180_000): Promise<{code: number | null; output: string}> {
    return runLlamaCppTool(binDirectory, binary, args, timeoutMilliseconds);
}

interface NativeRun {
    tokensPerSecond: number;
    /** Tokens decoded and draft tokens accepted / proposed (speculative runs). */
    decoded: number;
    accepted: number;
    drafted: number;
    command: string;
}

/** llama-bench's single-token decode (-p 0 -n N, one repetition after its own warm-up run). */
async function runLlamaBench(model: string, tokens: number): Promise<NativeRun> {
    const args = ["-m", model, "-p", "0", "-n", String(tokens), "-r", "1", "-t", String(threads), ...gpuLayerFlags, "-o", "json"];
    const {code, output} = await runTool("llama-bench", args);
    const start = output.indexOf("[");
    if (code !== 0 || start < 0) throw new Error(`llama-bench failed (${code}): ${output.slice(-1500)}`);
    const parsed = JSON.parse(output.slice(start, output.lastIndexOf("]") + 1)) as Array<{avg_ts: number}>;
    return {
        tokensPerSecond: parsed[0].avg_ts,
        decoded: tokens,
        accepted: Number.NaN,
        drafted: Number.NaN,
        command: commandLine("llama-bench", args)
    };
}

let speculativeSimpleRetries = 0;
/** Runs of llama-speculative-simple until its summary lines arrive: on a loaded CPU they are lost in about one run of four. */
const summaryAttempts = 6;

async function runSpeculativeSimple(options: {
    target: string;
    draft?: string;
    /** The draft is an EAGLE-3 head (--spec-type draft-eagle3) rather than a draft model (draft-simple). */
    eagle3?: boolean;
    prompt: string;
    contextSize: number;
    temperature: number;
    tokens: number;
    seed: number;
}): Promise<NativeRun> {
    const modelFlags = (draft: string) =>
        draftModelFlags(draft, gamma).map((flag) => (options.eagle3 === true && flag === "draft-simple" ? "draft-eagle3" : flag));
    const drafting = options.draft != null ? [...modelFlags(options.draft), ...(onGpu ? ["-ngld", "99"] : [])] : ngramDraftFlags(gamma);
    const sampler = nativeSamplerFlags(options.temperature, options.seed);
    const args = [
        "-m",
        options.target,
        ...drafting,
        ...gpuLayerFlags,
        "-t",
        String(threads),
        "-tb",
        String(threads),
        "-td",
        String(threads),
        "-c",
        String(options.contextSize),
        "-n",
        String(options.tokens),
        ...sampler,
        "-p",
        options.prompt
    ];
    const command = `${commandLine("llama-speculative-simple", args.slice(0, -2))} -p '<prompt>'`;
    const {code, output, retries} = await runSpeculativeSimpleUntilSummary(binDirectory, args, summaryAttempts, 180_000);
    speculativeSimpleRetries += retries;
    const decoded = /decoded\s+(\d+) tokens in\s+([\d.]+) seconds, speed:\s+([\d.]+) t\/s/.exec(output);
    if (code !== 0 || decoded == null)
        throw new Error(`llama-speculative-simple failed (exit ${code}): ${command}\n${output.slice(-1500)}`);
    return {
        tokensPerSecond: Number(decoded[3]),
        decoded: Number(decoded[1]),
        drafted: Number(/n_drafted\s*=\s*(\d+)/.exec(output)?.[1] ?? Number.NaN),
        accepted: Number(/n_accept\s*=\s*(\d+)/.exec(output)?.[1] ?? Number.NaN),
        command
    };
}

// ---------------------------------------------------------------------------------------------
// bench

/** The token tree of the tree arm (--tree WIDTHxDEPTH, default 2x4: two chains of four from the pending token). */
const treeShape = parseTreeShape(value("--tree") ?? "2x4", "--tree");
const treeArm = `tree ${treeShapeLabel(treeShape)} model drafter` as const;
/** Target-only with every logit row copied to the host and reduced there (deviceSelection off): what device token selection saves. */
const hostArm = "target-only, host selection" as const;
/** Strict γ = 4 with the case's EAGLE-3 head (its own target instance, which keeps the layers the head reads). */
const eagle3Arm = "strict γ=4 eagle3 head" as const;
type ArmName =
    | "target-only"
    | typeof hostArm
    | "strict γ=4 model drafter"
    | "strict γ=4 ngram drafter"
    | "block γ=4 model drafter"
    | typeof treeArm
    | typeof eagle3Arm;
/** Arms without a draft: γ = 0 against llama-bench. */
const isTargetOnly = (arm: ArmName): boolean => arm === "target-only" || arm === hostArm;
/** --arms target,host,strict,ngram,block,tree,eagle3 (default all but host): which arms run, by short name. */
const armsByShortName: Record<string, ArmName> = {
    target: "target-only",
    host: hostArm,
    strict: "strict γ=4 model drafter",
    ngram: "strict γ=4 ngram drafter",
    block: "block γ=4 model drafter",
    tree: treeArm,
    eagle3: eagle3Arm
};
const armNames: readonly ArmName[] = (value("--arms") ?? "target,strict,ngram,block,tree,eagle3").split(",").map((name) => {
    const arm = armsByShortName[name.trim()];
    if (arm === undefined) throw new Error(`--arms: "${name}" is not one of ${Object.keys(armsByShortName).join(", ")}`);
    return arm;
});
/** Arms llama.cpp has no counterpart of (block verification, token trees): specgate alone, compared with its own chain. */
const specgateOnly = (arm: ArmName): boolean => arm === "block γ=4 model drafter" || arm === treeArm;
const specgateOnlyArms = armNames.filter(specgateOnly);
/** --interleave-arms: every arm of a case and temperature one repetition at a time (measureArmsInterleaved), not one arm after another. */
const interleaveArms = flag("--interleave-arms");
/**
 * --eagle3-drafts sample|greedy: how the eagle3 arm drafts at T > 0 (draftSampling). llama.cpp's
 * draft-eagle3 drafts the head's top token, verified as "the target's draw equals it": greedy, which
 * strict verifies as a q-less proposal, is the same algorithm.
 */
const eagle3Drafts = (value("--eagle3-drafts") ?? "sample") as "sample" | "greedy";
if (eagle3Drafts !== "sample" && eagle3Drafts !== "greedy")
    throw new Error(`--eagle3-drafts must be sample or greedy, got ${eagle3Drafts}`);
const usesDraftModel = (arm: ArmName): boolean => arm === "strict γ=4 model drafter" || specgateOnly(arm);

interface ArmRow {
    case: string;
    temperature: number;
    arm: ArmName;
    specgate: number[];
    native: number[];
    ratios: number[];
    /**
     * specgate: emitted tokens, target steps, drafts, draft tokens, accepted draft tokens, and bytes copied
     * out of the compute graphs (logit rows, device-selected ids; telemetry.deviceToHost) — summed over repetitions.
     */
    specgateCounts: {emitted: number; steps: number; drafts: number; draftTokens: number; accepted: number; deviceToHostBytes: number};
    /** llama.cpp: decoded, accepted, drafted (summed). */
    nativeCounts: {decoded: number; accepted: number; drafted: number};
    /** Median over repetitions of specgate's mean target-evaluation ms per batch size (t(k)). */
    costCurve: Record<number, number>;
    /** Median of specgate's mean target ms per verification step (all batch sizes) and draft-model ms per draft token. */
    verifyMillisecondsPerStep: number;
    draftTokenMilliseconds: number | null;
    /** Median of specgate's drafting milliseconds per target step. */
    draftMillisecondsPerStep: number;
    nativeCommand: string;
    skipped?: string;
}

function addCounts(row: ArmRow, telemetry: GenerationTelemetry): void {
    row.specgateCounts.emitted += telemetry.emittedTokens;
    row.specgateCounts.steps += telemetry.steps;
    row.specgateCounts.drafts += telemetry.drafts;
    row.specgateCounts.draftTokens += telemetry.draftTokens;
    row.specgateCounts.accepted += telemetry.acceptedTokens;
    row.specgateCounts.deviceToHostBytes += telemetry.deviceToHost.target + telemetry.deviceToHost.draft;
}

/** Bytes copied out of the graphs per emitted token, over the row's repetitions. */
const bytesPerToken = (row: ArmRow): number => row.specgateCounts.deviceToHostBytes / Math.max(1, row.specgateCounts.emitted);

function verifyMillisecondsPerStep(telemetry: GenerationTelemetry): number {
    let total = 0;
    let count = 0;
    for (const [milliseconds, calls] of telemetry.targetEvaluations.values()) {
        total += milliseconds;
        count += calls;
    }
    return count === 0 ? Number.NaN : total / count;
}

/** GPU name and driver (nvidia-smi), else what ggml reports. */
function deviceDescription(backend: NativeBackend): {gpu: string; driver: string; addonDevice: string; build: string} {
    const smi = spawnSync("nvidia-smi", ["--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"], {encoding: "utf8"});
    const [name, driver, memory] =
        smi.status === 0
            ? smi.stdout
                  .trim()
                  .split("\n")[0]
                  .split(",")
                  .map((part) => part.trim())
            : [];
    return {
        gpu: name == null ? "none (nvidia-smi absent)" : `${name} (${memory})`,
        driver: driver ?? "–",
        addonDevice: backend.device,
        build: backend.nativeBuild
    };
}

interface BenchSettings {
    outDirectory: string;
    /** Epoch milliseconds by which the report must be written. */
    deadline: number;
    reps: number;
    maxTokens: number;
    temperatures: number[];
    label: string;
}

/** Held back from the deadline for the report. */
const reserveMilliseconds = 10_000;

function benchSettings(): BenchSettings {
    return {
        outDirectory: resolve(value("--out") ?? join(root, ".device/out")),
        deadline: Number(value("--deadline") ?? Number.POSITIVE_INFINITY) * 1000,
        reps: Number(value("--reps") ?? (quick ? 2 : 5)),
        maxTokens: Number(value("--tokens") ?? (quick ? 16 : 128)),
        temperatures: (value("--temperatures") ?? "0").split(",").map(Number),
        label: value("--label") ?? ""
    };
}

function emptyRow(caseName: string, temperature: number, arm: ArmName): ArmRow {
    return {
        case: caseName,
        temperature,
        arm,
        specgate: [],
        native: [],
        ratios: [],
        specgateCounts: {emitted: 0, steps: 0, drafts: 0, draftTokens: 0, accepted: 0, deviceToHostBytes: 0},
        nativeCounts: {decoded: 0, accepted: 0, drafted: 0},
        costCurve: {},
        verifyMillisecondsPerStep: Number.NaN,
        draftTokenMilliseconds: null,
        draftMillisecondsPerStep: Number.NaN,
        nativeCommand: ""
    };
}

/** One case's loaded models and what an arm needs of them. */
interface LoadedCase {
    benchCase: BenchCase;
    target: NativeBackend;
    draft: NativeBackend;
    /** The target again with deviceSelection off, for the host-selection arm (undefined when it does not run). */
    hostTarget?: NativeBackend;
    /** The eagle3 arm's head and its own instance of the target (undefined when the arm does not run). */
    eagle3?: {target: NativeBackend; head: Eagle3HeadBackend};
}

/** One arm at one temperature while it runs: its row, how it runs a repetition, and the figures that become medians. */
interface ArmRun {
    readonly arm: ArmName;
    readonly row: ArmRow;
    readonly benchCase: BenchCase;
    readonly started: number;
    readonly specgateArm: (prompt: string, seed: number, tokens?: number) => Promise<GenerationTelemetry>;
    readonly nativeArm: (prompt: string, seed: number) => Promise<NativeRun>;
    readonly curves: Array<Record<number, number>>;
    readonly perStep: number[];
    readonly draftMilliseconds: number[];
    readonly draftPerStep: number[];
    failed: boolean;
}

/** An arm's generations (specgate's and llama.cpp's) at one temperature, after specgate's 8-token warm-up. */
async function startArm(loaded: LoadedCase, temperature: number, arm: ArmName, settings: BenchSettings, errors: string[]): Promise<ArmRun> {
    const {benchCase} = loaded;
    const withHead = arm === eagle3Arm && loaded.eagle3 !== undefined;
    const target = withHead
        ? loaded.eagle3!.target
        : arm === hostArm && loaded.hostTarget !== undefined
          ? loaded.hostTarget
          : loaded.target;
    const draft = withHead ? loaded.eagle3!.head : loaded.draft;
    const sampling = {temperature, topK: 0, topP: 1, minP: 0};
    const promptOf = (prompt: string) => {
        const tokens = target.tokenize(prompt);
        if (target.bosToken != null && tokens[0] !== target.bosToken) tokens.unshift(target.bosToken);
        return tokens;
    };
    const specgateArm = async (prompt: string, seed: number, tokens = settings.maxTokens) =>
        (
            await generate(target, usesDraftModel(arm) || withHead ? draft : undefined, promptOf(prompt), {
                policy: {kind: arm === "block γ=4 model drafter" ? "block" : "strict"},
                gamma: isTargetOnly(arm) ? 0 : gamma,
                ...(arm === treeArm ? {tree: treeShape} : {}),
                sampling,
                maxTokens: tokens,
                seed,
                ignoreEos: true,
                ...(arm === "strict γ=4 ngram drafter" ? {drafter: "ngram:3:3"} : {}),
                ...(withHead ? {drafter: "eagle3", draftSampling: eagle3Drafts} : {})
            })
        ).telemetry;
    const nativeArm = (prompt: string, seed: number): Promise<NativeRun> =>
        isTargetOnly(arm)
            ? runLlamaBench(benchCase.target, settings.maxTokens)
            : runSpeculativeSimple({
                  target: benchCase.target,
                  draft: arm === "strict γ=4 model drafter" ? benchCase.draft : withHead ? benchCase.head : undefined,
                  eagle3: withHead,
                  prompt,
                  contextSize: target.contextSize,
                  temperature,
                  tokens: settings.maxTokens,
                  seed
              });
    const run: ArmRun = {
        arm,
        row: emptyRow(benchCase.name, temperature, arm),
        benchCase,
        started: Date.now(),
        specgateArm,
        nativeArm,
        curves: [],
        perStep: [],
        draftMilliseconds: [],
        draftPerStep: [],
        failed: false
    };
    try {
        await specgateArm(benchCase.prompts[0], 0, 8); // warm-up: contexts, graphs, page cache
    } catch (error) {
        failArm(run, error, errors);
    }
    return run;
}

function failArm(run: ArmRun, error: unknown, errors: string[]): void {
    run.failed = true;
    run.row.skipped = `error: ${(error as Error).message.split("\n")[0]}`;
    errors.push(`${run.benchCase.name} ${run.arm}: ${(error as Error).message}`);
}

/** Repetition `rep`: prompt rep mod the prompts, seed rep + 1, specgate and llama.cpp in turn (the first alternating). */
async function runRepetition(run: ArmRun, rep: number, errors: string[]): Promise<void> {
    const prompt = run.benchCase.prompts[rep % run.benchCase.prompts.length];
    try {
        let telemetry: GenerationTelemetry;
        let nativeResult: NativeRun | undefined;
        if (specgateOnly(run.arm)) {
            telemetry = await run.specgateArm(prompt, rep + 1);
        } else if (rep % 2 === 0) {
            telemetry = await run.specgateArm(prompt, rep + 1);
            nativeResult = await run.nativeArm(prompt, rep + 1);
        } else {
            nativeResult = await run.nativeArm(prompt, rep + 1);
            telemetry = await run.specgateArm(prompt, rep + 1);
        }
        run.row.specgate.push(telemetry.tokensPerSecond);
        addCounts(run.row, telemetry);
        run.curves.push(telemetry.costCurve());
        run.perStep.push(verifyMillisecondsPerStep(telemetry));
        run.draftPerStep.push(telemetry.time.draft / Math.max(1, telemetry.steps));
        const draftToken = telemetry.toJSON().draftTokenMilliseconds;
        if (draftToken != null) run.draftMilliseconds.push(draftToken);
        if (nativeResult !== undefined) addNativeRun(run.row, telemetry, nativeResult);
    } catch (error) {
        failArm(run, error, errors);
    }
}

/** The row, with the medians of the cost curve and step times over the repetitions that ran. */
function finishArm(run: ArmRun): ArmRow {
    const {row, curves} = run;
    const sizes = [...new Set(curves.flatMap((curve) => Object.keys(curve).map(Number)))].sort((a, b) => a - b);
    row.costCurve = Object.fromEntries(sizes.map((size) => [size, median(curves.map((curve) => curve[size]))]));
    row.verifyMillisecondsPerStep = median(run.perStep);
    row.draftTokenMilliseconds = run.draftMilliseconds.length > 0 ? median(run.draftMilliseconds) : null;
    row.draftMillisecondsPerStep = median(run.draftPerStep);
    return row;
}

/**
 * One arm at one temperature: specgate's and llama.cpp's repetitions interleaved (specgate-only arms
 * alone), until `reps` or the arm's share of the time left (`allowance`, ms) runs out.
 */
async function measureArm(
    loaded: LoadedCase,
    temperature: number,
    arm: ArmName,
    settings: BenchSettings,
    allowance: number,
    errors: string[]
): Promise<ArmRow> {
    const run = await startArm(loaded, temperature, arm, settings, errors);
    for (let rep = 0; rep < settings.reps && !run.failed; rep++) {
        const elapsed = Date.now() - run.started;
        const perRep = rep === 0 ? 0 : elapsed / rep;
        if (Date.now() + perRep > settings.deadline - reserveMilliseconds || (rep >= 2 && elapsed + perRep > allowance)) {
            run.row.skipped = `${rep} of ${settings.reps} repetitions (deadline)`;
            break;
        }
        await runRepetition(run, rep, errors);
    }
    return finishArm(run);
}

/**
 * Every arm at one temperature, one repetition of each at a time (--interleave-arms): repetition r runs
 * the arms in turn from arm r mod n, on the same prompt and seed, so the arms' tok/s pair up by
 * repetition; until `reps` or the time the arms were given (`allowance`, ms, all of them) runs out.
 */
async function measureArmsInterleaved(
    loaded: LoadedCase,
    temperature: number,
    arms: readonly ArmName[],
    settings: BenchSettings,
    allowance: number,
    errors: string[]
): Promise<ArmRow[]> {
    const runs: ArmRun[] = [];
    for (const arm of arms) runs.push(await startArm(loaded, temperature, arm, settings, errors));
    const started = Date.now();
    for (let rep = 0; rep < settings.reps; rep++) {
        const elapsed = Date.now() - started;
        const perRep = rep === 0 ? 0 : elapsed / rep;
        if (Date.now() + perRep > settings.deadline - reserveMilliseconds || (rep >= 2 && elapsed + perRep > allowance)) {
            for (const run of runs) run.row.skipped ??= `${rep} of ${settings.reps} repetitions (deadline)`;
            break;
        }
        for (let turn = 0; turn < runs.length; turn++) {
            const run = runs[(rep + turn) % runs.length];
            if (!run.failed) await runRepetition(run, rep, errors);
        }
    }
    return runs.map(finishArm);
}

function addNativeRun(row: ArmRow, telemetry: GenerationTelemetry, nativeResult: NativeRun): void {
    row.native.push(nativeResult.tokensPerSecond);
    row.ratios.push(telemetry.tokensPerSecond / nativeResult.tokensPerSecond);
    if (!isTargetOnly(row.arm)) {
        row.nativeCounts.decoded += nativeResult.decoded;
        row.nativeCounts.accepted += nativeResult.accepted;
        row.nativeCounts.drafted += nativeResult.drafted;
    }
    row.nativeCommand = nativeResult.command;
}

/** What the report reads off a row beside its case's target-only row. */
interface Derived {
    costRatio: number;
    specgateTokensPerStep: number;
    nativeTokensPerStep: number;
    meanAcceptanceLength: number;
    acceptanceRate: number;
    nativeAcceptanceRate: number;
    specgateSpeedup: number;
    nativeSpeedup: number;
    limit: number;
}

const findRow = (rows: readonly ArmRow[], caseName: string, temperature: number, arm: ArmName): ArmRow | undefined =>
    rows.find((row) => row.case === caseName && row.temperature === temperature && row.arm === arm);

function derive(row: ArmRow, rows: readonly ArmRow[]): Derived {
    const base = findRow(rows, row.case, row.temperature, "target-only");
    const t1 = base?.costCurve[1] ?? Number.NaN;
    const counts = row.specgateCounts;
    const specgateTokensPerStep = counts.steps === 0 ? Number.NaN : counts.emitted / counts.steps;
    if (isTargetOnly(row.arm))
        return {
            costRatio: 1,
            specgateTokensPerStep,
            nativeTokensPerStep: 1,
            meanAcceptanceLength: Number.NaN,
            acceptanceRate: Number.NaN,
            nativeAcceptanceRate: Number.NaN,
            specgateSpeedup: 1,
            nativeSpeedup: 1,
            limit: 1
        };
    // Each target step of llama-speculative-simple emits its accepted drafts + 1: steps = decoded − accepted.
    const nativeCounts = row.nativeCounts;
    const nativeTokensPerStep = nativeCounts.decoded / (nativeCounts.decoded - nativeCounts.accepted);
    // The analytic limit (src/speedup/speedupModel.ts speedupFromCostCurve) with f_γ(α) replaced by the
    // measured tokens per step: tokens/step · t(1) / (t_verify + γ · t_draft). Model drafter: t_verify =
    // t(γ+1); n-gram drafter: the mean verification call (its drafts vary in length), t_draft = 0.
    // Block verification and trees: their own mean target call and drafting time per step. EAGLE-3 head:
    // t(γ+1) of its capturing target, and the head's drafting time per step.
    const chain = row.arm === "strict γ=4 model drafter";
    const fixedChain = chain || row.arm === eagle3Arm;
    const verify = fixedChain ? (row.costCurve[gamma + 1] ?? Number.NaN) : row.verifyMillisecondsPerStep;
    const draftCost = chain
        ? gamma * (row.draftTokenMilliseconds ?? Number.NaN)
        : usesDraftModel(row.arm) || row.arm === eagle3Arm
          ? row.draftMillisecondsPerStep
          : 0;
    return {
        costRatio:
            (fixedChain || row.arm === "strict γ=4 ngram drafter"
                ? (row.costCurve[gamma + 1] ?? Number.NaN)
                : row.verifyMillisecondsPerStep) / t1,
        specgateTokensPerStep,
        nativeTokensPerStep,
        meanAcceptanceLength: counts.drafts === 0 ? Number.NaN : 1 + counts.accepted / counts.drafts,
        acceptanceRate: counts.draftTokens === 0 ? Number.NaN : counts.accepted / counts.draftTokens,
        nativeAcceptanceRate: nativeCounts.accepted / nativeCounts.drafted,
        specgateSpeedup: median(row.specgate) / median(base?.specgate ?? []),
        nativeSpeedup: median(row.native) / median(base?.native ?? []),
        limit: (specgateTokensPerStep * t1) / (verify + draftCost)
    };
}

/** An arm's tok/s over its tool's target-only tok/s at the same case and temperature, with its 95% interval. */
function speedupInterval(row: ArmRow, rows: readonly ArmRow[], tool: "specgate" | "native"): SpeedInterval {
    const base = findRow(rows, row.case, row.temperature, "target-only");
    return medianRatioInterval(row[tool], base?.[tool] ?? []);
}

/** One line per case and arm: ≥ 0.95× llama.cpp; faster than target-only wherever llama.cpp's speculative example is; the analytic limit and the measured speed-up within 10% of each other. */
interface TargetEntry {
    case: string;
    temperature: number;
    arm: ArmName;
    ratio: number;
    ratioMet: boolean;
    faster?: boolean;
    nativeSpeedup?: number;
    speedup?: number;
    limit?: number;
    withinLimit?: boolean;
}

function targetEntries(rows: readonly ArmRow[]): TargetEntry[] {
    const targets: TargetEntry[] = [];
    for (const row of caseNames.flatMap((caseName) => rows.filter((entry) => entry.case === caseName))) {
        if (row.specgate.length === 0 || specgateOnly(row.arm)) continue;
        const ratio = median(row.ratios);
        const entry: TargetEntry = {case: row.case, temperature: row.temperature, arm: row.arm, ratio, ratioMet: ratio >= 0.95};
        if (!isTargetOnly(row.arm)) {
            const derived = derive(row, rows);
            entry.nativeSpeedup = derived.nativeSpeedup;
            entry.speedup = derived.specgateSpeedup;
            entry.limit = derived.limit;
            if (derived.nativeSpeedup > 1) entry.faster = derived.specgateSpeedup > 1;
            entry.withinLimit = Math.abs(derived.specgateSpeedup / derived.limit - 1) <= 0.1;
        }
        targets.push(entry);
    }
    return targets;
}

/** What the report's header says about where and how it ran. */
interface RunContext {
    settings: BenchSettings;
    cases: Record<string, BenchCase>;
    device: ReturnType<typeof deviceDescription> | undefined;
    machine: {cpu: string; cores: number; node: string; platform: string};
    commit: string;
    started: Date;
    loadAtStart: number[];
}

function headerLines(context: RunContext): string[] {
    const {settings, device, machine} = context;
    return [
        `# specgate against llama.cpp on ${device?.gpu ?? "?"}`,
        "",
        `Device: **${device?.gpu ?? "?"}**, driver ${device?.driver ?? "?"}; specgate's addon build "${device?.build ?? "?"}" on ${device?.addonDevice ?? "?"}. ` +
            `Host: ${machine.cores}-core ${machine.cpu} (${cpuInstructionSet().join(", ") || "instruction set unknown"}), ${machine.platform}, Node ${machine.node}. llama.cpp ${context.commit}${settings.label !== "" ? ` (${settings.label})` : ""}.`,
        `Date ${context.started.toISOString()}; load average at start ${fixed(context.loadAtStart[0])}. ${settings.reps} repetitions per arm planned${quick ? " (--quick)" : ""}, ${settings.maxTokens} tokens each, EOS ignored, ` +
            `${interleaveArms ? "arms run repetition by repetition (the first arm rotating), each specgate / llama.cpp pair in turn (the first alternating)" : "arms interleaved (first arm alternating)"}; threads ${threads}; ${onGpu ? "all layers offloaded (-ngl 99, -ngld 99; specgate gpuLayers 999)" : "CPU only"}. ` +
            `llama-speculative-simple reruns for lost summary lines: ${speculativeSimpleRetries}. ` +
            `The eagle3 arm's drafts at T > 0: ${eagle3Drafts === "greedy" ? "the head's top token (greedy, as llama.cpp's draft-eagle3)" : "sampled from the head's rows"}.`,
        "",
        "Columns: tok/s are medians over repetitions; ratio = median of per-repetition specgate / llama.cpp [95% bootstrap interval]; t(γ+1)/t(1) = specgate's mean target call of γ+1 = 5 tokens over one of 1 token " +
            `(block and tree rows: their mean target call, the tree's of ${treeShape.width * treeShape.depth + 1} tokens; target-only row: t(1) in ms); ` +
            "acceptance = specgate mean acceptance length (acceptance rate) | llama.cpp acceptance rate; tokens/step = emitted tokens per target call; " +
            "speed-up over target-only = arm tok/s over the same tool's target-only tok/s (medians) [95% bootstrap interval]; limit = tokens/step · t(1) / (t_verify + γ·t_draft) from specgate's own costs; measured/limit = specgate speed-up / limit; " +
            "bytes/token = specgate's bytes copied out of the compute graphs (logit rows, or ids picked on the device) per emitted token."
    ];
}

/** A case's table, then how its specgate-only arms compare with specgate's chain. */
function caseLines(caseName: string, rows: readonly ArmRow[], context: RunContext): string[] {
    const caseRows = rows.filter((row) => row.case === caseName);
    if (caseRows.length === 0) return [];
    const lines = [
        "",
        `## ${caseName}: ${context.cases[caseName]?.label ?? ""}`,
        "",
        "| case | T | arm | specgate tok/s | llama.cpp tok/s | ratio | t(γ+1)/t(1) | acceptance (specgate \\| llama.cpp) | tokens/step (specgate, llama.cpp) | speed-up over target-only (specgate, llama.cpp) | analytic limit | measured/limit | bytes/token | reps |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    ];
    for (const row of caseRows) {
        const derived = derive(row, rows);
        const speculative = !isTargetOnly(row.arm);
        lines.push(
            `| ${caseName} | ${row.temperature} | ${row.arm} | ${fixed(median(row.specgate), 1)} | ${fixed(median(row.native), 1)} | ${formatInterval(medianInterval(row.ratios), 3)} | ` +
                `${speculative ? fixed(derived.costRatio) : `t(1) ${fixed(row.costCurve[1], 3)} ms`} | ` +
                `${speculative ? `${fixed(derived.meanAcceptanceLength)} (${fixed(derived.acceptanceRate)}) \\| ${fixed(derived.nativeAcceptanceRate)}` : "–"} | ` +
                `${speculative ? `${fixed(derived.specgateTokensPerStep)}, ${fixed(derived.nativeTokensPerStep)}` : "1, 1"} | ` +
                `${speculative ? `${formatInterval(speedupInterval(row, rows, "specgate"), 2, "×")}, ${formatInterval(speedupInterval(row, rows, "native"), 2, "×")}` : "1×, 1×"} | ${speculative ? `${fixed(derived.limit)}×` : "–"} | ` +
                `${speculative ? fixed(derived.specgateSpeedup / derived.limit) : "–"} | ${fixed(bytesPerToken(row), 1)} | ${row.specgate.length}${row.skipped != null ? ` (${row.skipped})` : ""} |`
        );
    }
    for (const temperature of context.settings.temperatures) {
        const chain = findRow(rows, caseName, temperature, "strict γ=4 model drafter");
        if (chain === undefined || chain.specgate.length === 0) continue;
        const versus = specgateOnlyArms
            .map((arm) => findRow(rows, caseName, temperature, arm))
            .filter((row): row is ArmRow => row !== undefined && row.specgate.length > 0)
            .map(
                (row) =>
                    `${row.arm}: ${fixed(median(row.specgate) / median(chain.specgate), 3)}× its tok/s, ` +
                    `${fixed(derive(row, rows).specgateTokensPerStep / derive(chain, rows).specgateTokensPerStep, 3)}× its tokens/step`
            );
        if (versus.length > 0)
            lines.push("", `T = ${temperature}, against specgate's strict γ=4 chain (llama.cpp has neither): ${versus.join("; ")}.`);
    }
    return lines;
}

function targetLines(targets: readonly TargetEntry[]): string[] {
    const verdict = (met: boolean | undefined, text: string) => (met == null ? "–" : `${met ? "yes" : "**no**"} (${text})`);
    return [
        "",
        "## Targets",
        "",
        "| case | T | arm | ≥ 0.95× llama.cpp | faster than target-only where llama.cpp's is | speed-up within 10% of the limit |",
        "|---|---|---|---|---|---|",
        ...targets.map(
            (entry) =>
                `| ${entry.case} | ${entry.temperature} | ${entry.arm} | ${verdict(entry.ratioMet, `${fixed(entry.ratio, 3)}×`)} | ` +
                `${isTargetOnly(entry.arm) ? "–" : entry.faster == null ? `– (llama.cpp ${fixed(entry.nativeSpeedup)}×)` : verdict(entry.faster, `${fixed(entry.speedup)}× where llama.cpp ${fixed(entry.nativeSpeedup)}×`)} | ` +
                `${verdict(entry.withinLimit, `${fixed(entry.speedup)}× vs ${fixed(entry.limit)}×`)} |`
        )
    ];
}

/**
 * Speed-up targets of the twins (the strict γ=4 chain over target-only, any type or draft): on a GPU a
 * verification of γ+1 tokens costs about one target step; on a CPU (2 threads) more.
 */
const twinSpeedupTargets: Record<string, number> = onGpu ? {"twin-1b": 2.0, "twin-7b": 2.5} : {"twin-0.1b": 1.5, "twin-1b": 1.8};

function twinTargetLine(row: ArmRow, rows: readonly ArmRow[], goal: number): string {
    const derived = derive(row, rows);
    const speedup = speedupInterval(row, rows, "specgate");
    const ratio = medianInterval(row.ratios);
    const ofLimit = derived.specgateSpeedup / derived.limit;
    const verdict = (met: boolean) => (met ? "yes" : "**no**");
    return (
        `| ${row.case} | ${row.temperature} | ${formatInterval(speedup, 2, "×")} | ≥ ${goal}×: ${verdict(speedup.estimate >= goal)} | ` +
        `${formatInterval(ratio, 3, "×")}: ${verdict(ratio.estimate >= 1)} | ${fixed(ofLimit)}: ${verdict(ofLimit >= 0.9)} |`
    );
}

function twinTargetLines(rows: readonly ArmRow[]): string[] {
    const lines: string[] = [];
    for (const caseName of caseNames) {
        const goal = twinSpeedupTargets[caseName.replace(/-q8|-wdraft/g, "")];
        if (goal === undefined) continue;
        const chains = rows.filter((row) => row.case === caseName && row.arm === "strict γ=4 model drafter" && row.specgate.length > 0);
        lines.push(...chains.map((row) => twinTargetLine(row, rows, goal)));
    }
    if (lines.length === 0) return [];
    return [
        "",
        "## Twin targets (strict γ=4, model drafter)",
        "",
        "| case | T | speed-up over target-only | target | specgate / llama-speculative-simple (≥ 1.0×) | measured/limit (≥ 0.9) |",
        "|---|---|---|---|---|---|",
        ...lines
    ];
}

function errorAndCommandLines(rows: readonly ArmRow[], errors: readonly string[], temperatures: readonly number[]): string[] {
    const lines: string[] = [];
    if (errors.length > 0) lines.push("", "Errors:", "", ...errors.map((error) => `- ${error.split("\n").slice(0, 3).join(" / ")}`));
    lines.push(
        "",
        "## Commands",
        "",
        "llama.cpp arms (the tools in the device build's bin/; one repetition's command per case and arm):",
        ""
    );
    for (const row of caseNames.flatMap((caseName) =>
        rows.filter((entry) => entry.case === caseName && entry.nativeCommand !== "" && entry.temperature === temperatures[0])
    ))
        lines.push(`- ${row.case}, ${row.arm}: \`${row.nativeCommand}\``);
    return lines;
}

/** The EAGLE-3 head's arm beside the draft model's, wherever both ran with llama.cpp beside them. */
function eagle3Comparisons(rows: readonly ArmRow[], temperatures: readonly number[]): Eagle3Comparison[] {
    return caseNames.flatMap((caseName) =>
        temperatures.flatMap((temperature) => {
            const draftModel = findRow(rows, caseName, temperature, "strict γ=4 model drafter");
            const head = findRow(rows, caseName, temperature, eagle3Arm);
            if (draftModel === undefined || head === undefined || draftModel.native.length === 0 || head.native.length === 0) return [];
            return [compareEagle3(draftModel, head, gamma, interleaveArms)];
        })
    );
}

/** Every case × temperature × arm, the Markdown report and the JSON record. */
/** --streams 1,4,16 (absent: no concurrent-streams table), --gammas 0,2,4,8,auto, --rounds 3, --auto-max 8: streamsBench.ts. */
function streamsSettings(settings: BenchSettings): StreamsSettings | undefined {
    const streams = value("--streams");
    if (streams === undefined) return undefined;
    return {
        streams: streams.split(",").map(Number),
        gammas: parseGammaArms(value("--gammas") ?? "0,2,4,8,auto"),
        rounds: Number(value("--rounds") ?? 3),
        maxTokens: settings.maxTokens,
        autoMax: Number(value("--auto-max") ?? 8),
        deadline: settings.deadline - reserveMilliseconds
    };
}

/** The case's target and draft for `streams` concurrent sequences on one shared context each. */
async function loadBatchedPair(benchCase: BenchCase, streams: number): Promise<BatchedPair> {
    const options = {threads, gpu, gpuLayers: 999, batchedSequences: streams};
    const target = await NativeBackend.load(benchCase.target, options);
    const draft = await NativeBackend.load(benchCase.draft, options);
    return {
        target,
        draft,
        dispose: async () => {
            await draft.dispose();
            await target.dispose();
        }
    };
}

/**
 * The eagle3 arm's head and its own instance of the target (pairing makes a target keep the layers a
 * head reads, which the other arms must not pay for); undefined for a case without a head, or whose
 * head file is missing (an error line of the report says so).
 */
async function loadEagle3(benchCase: BenchCase, errors: string[]): Promise<LoadedCase["eagle3"]> {
    if (benchCase.head === undefined) return undefined;
    if (!existsSync(benchCase.head)) {
        errors.push(`${benchCase.name}: no EAGLE-3 head at ${benchCase.head}: the ${eagle3Arm} arm did not run (--head HEAD.gguf)`);
        log(`${benchCase.name}: no EAGLE-3 head at ${benchCase.head}; ${eagle3Arm} skipped`);
        return undefined;
    }
    const options = {threads, gpu, gpuLayers: 999};
    const target = await NativeBackend.load(benchCase.target, options);
    try {
        return {target, head: await Eagle3HeadBackend.load(benchCase.head, options)};
    } catch (error) {
        await target.dispose();
        throw error;
    }
}

async function bench(): Promise<void> {
    await writeFixtures();
    const settings = benchSettings();
    const streams = streamsSettings(settings);
    const streamRows: StreamsRow[] = [];
    const cases = benchCases();
    // Run order: the twins and the ≈1B pair first (the cases a GPU is for), then the order given.
    const large = (name: string) => Number(name === "b1" || name.startsWith("twin-"));
    const runOrder = [...caseNames].sort((a, b) => large(b) - large(a));
    const rows: ArmRow[] = [];
    const started = new Date();
    const loadAtStart = loadavg();
    let device: ReturnType<typeof deviceDescription> | undefined;
    let backendInfo: unknown;
    const errors: string[] = [];
    let armsLeft = runOrder.length * settings.temperatures.length * armNames.length;

    for (const name of runOrder) {
        const benchCase = cases[name];
        if (benchCase == null) throw new Error(`unknown case ${name}`);
        let target: NativeBackend | undefined;
        let draft: NativeBackend | undefined;
        let hostTarget: NativeBackend | undefined;
        let eagle3: LoadedCase["eagle3"];
        try {
            target = await NativeBackend.load(benchCase.target, {threads, gpu, gpuLayers: 999});
            draft = await NativeBackend.load(benchCase.draft, {threads, gpu, gpuLayers: 999});
            if (armNames.includes(hostArm))
                hostTarget = await NativeBackend.load(benchCase.target, {threads, gpu, gpuLayers: 999, deviceSelection: false});
            if (armNames.includes(eagle3Arm)) eagle3 = await loadEagle3(benchCase, errors);
            device ??= deviceDescription(target);
            backendInfo ??= nativeAddon(target.nativeBuild).backendInfo();
            log(`${name}: ${benchCase.label}; specgate on ${target.nativeBuild} (${target.device}), context ${target.contextSize}`);
            const loaded = {benchCase, target, draft, hostTarget, eagle3};
            const arms = armNames.filter((arm) => arm !== eagle3Arm || eagle3 !== undefined);
            armsLeft -= (armNames.length - arms.length) * settings.temperatures.length;
            const logRow = async (row: ArmRow) => {
                rows.push(row);
                log(
                    `${name} T=${row.temperature} ${row.arm}: specgate ${fixed(median(row.specgate), 1)} tok/s, llama.cpp ${fixed(median(row.native), 1)} tok/s, ` +
                        `ratio ${fixed(median(row.ratios), 3)} (${row.specgate.length} reps${row.skipped != null ? `; ${row.skipped}` : ""})`
                );
                await mkdir(settings.outDirectory, {recursive: true});
                await writeFile(join(settings.outDirectory, "device-bench.partial.json"), `${JSON.stringify(rows, null, 1)}\n`);
            };
            for (const temperature of settings.temperatures) {
                if (interleaveArms) {
                    const allowance = ((settings.deadline - reserveMilliseconds - Date.now()) / armsLeft) * arms.length;
                    armsLeft -= arms.length;
                    for (const row of await measureArmsInterleaved(loaded, temperature, arms, settings, allowance, errors))
                        await logRow(row);
                    continue;
                }
                for (const arm of arms) {
                    const allowance = (settings.deadline - reserveMilliseconds - Date.now()) / armsLeft--;
                    await logRow(await measureArm(loaded, temperature, arm, settings, allowance, errors));
                }
            }
            if (streams !== undefined) {
                const prompts = benchCase.prompts.map((prompt) => {
                    const tokens = target!.tokenize(prompt);
                    if (target!.bosToken != null && tokens[0] !== target!.bosToken) tokens.unshift(target!.bosToken);
                    return tokens;
                });
                streamRows.push(...(await measureStreams(name, (count) => loadBatchedPair(benchCase, count), prompts, streams, log)));
            }
        } catch (error) {
            errors.push(`${name}: ${(error as Error).message}`);
            log(`${name} failed: ${(error as Error).message}`);
        } finally {
            await eagle3?.head.dispose();
            await eagle3?.target.dispose();
            await hostTarget?.dispose();
            await draft?.dispose();
            await target?.dispose();
        }
    }

    const context: RunContext = {
        settings,
        cases,
        device,
        machine: {
            cpu: cpus()[0]?.model ?? "unknown",
            cores: cpus().length,
            node: process.version,
            platform: `${process.platform} ${process.arch}`
        },
        commit: existsSync(join(root, ".device/llama-src.commit"))
            ? readFileSync(join(root, ".device/llama-src.commit"), "utf8").trim().slice(0, 12)
            : "unknown",
        started,
        loadAtStart
    };
    const targets = targetEntries(rows);
    const eagle3 = eagle3Comparisons(rows, settings.temperatures);
    const lines = [
        ...headerLines(context),
        ...caseNames.flatMap((caseName) => caseLines(caseName, rows, context)),
        ...targetLines(targets),
        ...twinTargetLines(rows),
        ...eagle3ComparisonLines(eagle3),
        ...streamsLines(streamRows),
        ...errorAndCommandLines(rows, errors, settings.temperatures)
    ];
    await writeReport(rows, lines, {context, backendInfo, targets, errors, streamRows, eagle3});
    if (rows.every((row) => row.specgate.length === 0) && streamRows.every((row) => row.throughput.length === 0)) process.exitCode = 1;
}

async function writeReport(
    rows: readonly ArmRow[],
    lines: readonly string[],
    record: {
        context: RunContext;
        backendInfo: unknown;
        targets: readonly TargetEntry[];
        errors: readonly string[];
        streamRows: readonly StreamsRow[];
        eagle3: readonly Eagle3Comparison[];
    }
): Promise<void> {
    const {context, backendInfo, targets, errors, streamRows, eagle3} = record;
    const {settings, cases} = context;
    await mkdir(settings.outDirectory, {recursive: true});
    await writeFile(join(settings.outDirectory, "device-bench.md"), `${lines.join("\n")}\n`);
    const json = {
        date: context.started.toISOString(),
        finished: new Date().toISOString(),
        device: context.device,
        backendInfo,
        machine: context.machine,
        llamaCommit: context.commit,
        label: settings.label,
        loadAverage: {start: context.loadAtStart, end: loadavg()},
        settings: {
            gpu,
            threads,
            reps: settings.reps,
            maxTokens: settings.maxTokens,
            temperatures: settings.temperatures,
            gamma,
            quick,
            cases: caseNames.map((caseName) => cases[caseName])
        },
        rows: rows.map((row) => ({
            ...row,
            specgateMedian: median(row.specgate),
            nativeMedian: median(row.native),
            ratioMedian: median(row.ratios),
            derived: derive(row, rows)
        })),
        targets,
        streamRows,
        eagle3,
        errors,
        speculativeSimpleRetries
    };
    await writeFile(join(settings.outDirectory, "device-bench.json"), `${JSON.stringify(json, null, 2)}\n`);
    log(`wrote ${join(settings.outDirectory, "device-bench.md")} and device-bench.json`);
}

if (command === "fixtures") await writeFixtures();
else if (command === "bench") await bench();
else throw new Error(`unknown command ${command}: fixtures or bench`);
