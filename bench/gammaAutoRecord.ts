/**
 * Records what bench/gammaAutoReplay.ts replays: for one model pair,
 *  1. acceptance traces: each prompt's greedy target text (`generate`, T = 0, target-only, EOS not
 *     ignored, as `bench:serve` asks for it) and, at every position of it, whether the draft's greedy
 *     token given the true prefix is the target's (one teacher-forced draft evaluation per prompt). At
 *     T = 0 with greedy drafts and the strict policy, a step that starts at position p with a k-token
 *     draft accepts the run of matches from p on, capped at k: the trace answers every draft length.
 *     A γ = 8 engine run per prompt checks it (its per-position acceptance counts must agree).
 *  2. step costs as `specgate serve` pays them: the target and the draft loaded as serve loads them
 *     (continuous batching over S sequences, unified KV up to 4, separate streams above), S sequences
 *     holding a prompt, and the wall time of S concurrent evaluations of j tokens each (one shared
 *     llama_decode), the least over repetitions (other work on a shared machine only adds), for S in --streams and j in 1 + {0, 1, 2, 4, 8}; plus
 *     mixed steps (one or half of the sequences longer) to check how a step of unequal lengths costs.
 *
 *   npx tsx bench/gammaAutoRecord.ts --case family|twin-0.1b [--tokens 128] [--prompts 16]
 *       [--streams 1,4,16,32] [--reps 7] [--out bench/data/gamma-auto/CASE.json] [--traces-from FILE]
 */
import {existsSync, mkdirSync, readFileSync, writeFileSync} from "node:fs";
import {loadavg} from "node:os";
import {dirname, join, resolve} from "node:path";
import {fileURLToPath} from "node:url";
import {parseArgs} from "node:util";
import {NativeBackend} from "../src/backend/NativeBackend.js";
import type {BackendSequence} from "../src/backend/ModelBackend.js";
import {generate} from "../src/engine/generate.js";
import type {GenerationTelemetry} from "../src/engine/GenerationTelemetry.js";
import {benchMachine} from "./cpuInstructionSet.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const {values} = parseArgs({
    options: {
        case: {type: "string", default: "family"},
        tokens: {type: "string", default: "128"},
        prompts: {type: "string", default: "16"},
        streams: {type: "string", default: "1,4,16,32"},
        reps: {type: "string", default: "7"},
        out: {type: "string"},
        /** Take the traces from an earlier recording of the same pair (they are deterministic) and measure the step costs only. */
        "traces-from": {type: "string"}
    }
});
const targets: Record<string, string> = {
    family: join(root, "models/target/model.gguf"),
    "twin-0.1b": existsSync(join(root, ".specgate/twin-0.1b/target.gguf"))
        ? join(root, ".specgate/twin-0.1b/target.gguf")
        : join(root, ".specgate/bench-twins/twins/target-d768x8-f16.gguf")
};
const caseName = values.case!;
const targetPath = targets[caseName];
if (targetPath === undefined) throw new Error(`unknown --case ${caseName} (known: ${Object.keys(targets).join(", ")})`);
const draftPath = join(root, "models/draft/model.gguf");
const maxTokens = Number(values.tokens);
const reps = Number(values.reps);
const streamLevels = values.streams!.split(",").map(Number);
const out = resolve(values.out ?? join(root, `bench/data/gamma-auto/${caseName}.json`));
const prompts = readFileSync(join(root, "examples/family-prompts.jsonl"), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => (JSON.parse(line) as {prompt: string}).prompt)
    .slice(0, Number(values.prompts));
const log = (line: string): void => void process.stderr.write(`${line}\n`);

/** One prompt's trace: its tokens, the target's greedy continuation, and per continuation token whether the draft's greedy token matched. */
interface PromptTrace {
    readonly promptTokens: number;
    readonly text: number[];
    /** match[q]: the draft's greedy token after prompt + text[0..q) is text[q] (q = 0 is never drafted). */
    readonly match: number[];
    /** The γ = 8 engine run's accepted counts per draft position, and drafted counts. */
    readonly engineAcceptedPerPosition: number[];
    readonly engineDraftedPerPosition: number[];
    /** Engine milliseconds per step outside the prompt, the draft and the target calls, target-only and at γ = 8. */
    readonly engineOverheadMilliseconds: {readonly plain: number; readonly speculative: number};
}

/** Milliseconds per step that a generation spent outside its prompt, draft and target evaluations. */
function overheadPerStep(telemetry: GenerationTelemetry): number {
    const {total, prompt, draft, verify} = telemetry.time;
    return (total - prompt - draft - verify) / Math.max(1, telemetry.steps);
}

async function recordTraces(): Promise<PromptTrace[]> {
    const target = await NativeBackend.load(targetPath, {threads: 1, contextSize: 512});
    const draft = await NativeBackend.load(draftPath, {threads: 1, contextSize: 512});
    const sampling = {temperature: 0, topK: 0, topP: 1, minP: 0};
    const traces: PromptTrace[] = [];
    try {
        for (const prompt of prompts) {
            const plain = await generate(target, undefined, prompt, {policy: {kind: "strict"}, gamma: 0, sampling, maxTokens});
            const speculative = await generate(target, draft, prompt, {policy: {kind: "strict"}, gamma: 8, sampling, maxTokens});
            const promptIds = withBos(target, target.tokenize(prompt));
            if (promptIds.length !== plain.promptTokens)
                throw new Error(`prompt tokens ${promptIds.length} ≠ the engine's ${plain.promptTokens}`);
            const text = plain.tokens;
            const sequence = await draft.createSequence();
            const all = [...promptIds, ...text];
            const positions = text.map((_token, q) => promptIds.length - 1 + q);
            const argmax = await sequence.evaluateArgmax!(all.slice(0, -1), {positions});
            await sequence.dispose();
            const match = text.map((token, q): number => (q === 0 || argmax[q] !== token ? 0 : 1));
            if (speculative.text !== plain.text) log(`  note: γ = 8 text differs from target-only on "${prompt.slice(0, 30)}…"`);
            traces.push({
                promptTokens: plain.promptTokens,
                text,
                match,
                engineAcceptedPerPosition: speculative.telemetry.acceptedPerPosition,
                engineDraftedPerPosition: speculative.telemetry.draftedPerPosition,
                engineOverheadMilliseconds: {plain: overheadPerStep(plain.telemetry), speculative: overheadPerStep(speculative.telemetry)}
            });
            log(`  trace ${traces.length}/${prompts.length}: ${text.length} tokens, draft agrees on ${match.reduce((a, b) => a + b, 0)}`);
        }
    } finally {
        await target.dispose();
        await draft.dispose();
    }
    return traces;
}

function withBos(model: NativeBackend, tokens: number[]): number[] {
    const bos = model.bosToken;
    return bos !== undefined && bos !== null && tokens[0] !== bos ? [bos, ...tokens] : tokens;
}

/** Wall ms of `sequences` evaluating `lengths[i]` tokens each at once (one shared step), rolled back after. */
async function stepOnce(sequences: readonly BackendSequence[], lengths: readonly number[]): Promise<number> {
    const live = lengths.flatMap((length, index) => (length === 0 ? [] : [{length, sequence: sequences[index], index}]));
    const started = performance.now();
    await Promise.all(
        live.map(({length, sequence, index}) => sequence.evaluateArgmax!(Array.from({length}, (_v, t) => 5 + ((t + index) % 40))))
    );
    const milliseconds = performance.now() - started;
    await Promise.all(live.map(({length, sequence}) => sequence.rollback(length)));
    return milliseconds;
}

/**
 * Least wall ms of a step of `lengths` right after a step of `other` (the compute graph rebuilt for
 * each, where llama.cpp reuses a graph only for a batch of the same shape), over `reps` pairs.
 */
async function timeAlternating(
    sequences: readonly BackendSequence[],
    lengths: readonly number[],
    other: readonly number[]
): Promise<number> {
    const samples: number[] = [];
    for (let rep = 0; rep < reps; rep++) {
        await stepOnce(sequences, other);
        samples.push(await stepOnce(sequences, lengths));
    }
    return Math.min(...samples);
}

/** Least wall ms (other work on the machine only adds to a sample) of `sequences` evaluating `lengths[i]` tokens each at once (one shared step), rolled back after each. */
async function timeStep(sequences: readonly BackendSequence[], lengths: readonly number[]): Promise<number> {
    lengths.forEach((length, index) => {
        if (length === 0) sequences[index].idle?.();
    });
    // The first step warms the compute graph of this shape up.
    await stepOnce(sequences, lengths);
    const samples: number[] = [];
    for (let rep = 0; rep < reps; rep++) samples.push(await stepOnce(sequences, lengths));
    return Math.min(...samples);
}

interface CostPoint {
    readonly lengths: readonly number[];
    readonly milliseconds: number;
    /** The same step right after a step of `after` (a different shape). */
    readonly alternating?: {readonly after: readonly number[]; readonly milliseconds: number};
}

/** Step costs of the model at `streams` batched sequences, as serve loads it. */
async function recordCosts(path: string, streams: number, drafting: boolean): Promise<CostPoint[]> {
    const model = await NativeBackend.load(path, {
        threads: 1,
        contextSize: 256,
        inlineBelowMilliseconds: 1,
        batchedSequences: streams,
        stepTokens: 512,
        unifiedKvCache: streams <= 4
    });
    const points: CostPoint[] = [];
    try {
        const sequences = await Promise.all(Array.from({length: streams}, () => model.createSequence()));
        await Promise.all(
            sequences.map((sequence, index) => sequence.evaluateArgmax!(withBos(model, model.tokenize(prompts[index % prompts.length]))))
        );
        const shapes: number[][] = [];
        for (let live = 1; live <= streams; live *= 2) {
            const perSequence = drafting ? [1] : [1, 2, 3, 5, 9];
            for (const tokens of perSequence) shapes.push(Array.from({length: streams}, (_v, index) => (index < live ? tokens : 0)));
        }
        if (streams > 1)
            for (const longer of drafting ? [] : [2, 3, 5, 9]) {
                shapes.push(Array.from({length: streams}, (_v, index) => (index === 0 ? longer : 1)));
                shapes.push(Array.from({length: streams}, (_v, index) => (index < streams / 2 ? longer : 1)));
            }
        if (!drafting && streams > 1) shapes.push(Array.from({length: streams}, (_v, index) => 1 + 2 * (index % 5)));
        for (const lengths of shapes) points.push({lengths, milliseconds: await timeStep(sequences, lengths)});
        if (!drafting)
            for (const [a, b] of [
                [1, 5],
                [5, 1],
                [3, 9],
                [9, 3]
            ]) {
                const lengths = sequences.map(() => a);
                const after = sequences.map(() => b);
                points.push({
                    lengths,
                    milliseconds: await timeStep(sequences, lengths),
                    alternating: {after, milliseconds: await timeAlternating(sequences, lengths, after)}
                });
            }
        await Promise.all(sequences.map((sequence) => sequence.dispose()));
    } finally {
        await model.dispose();
    }
    return points;
}

const loadBefore = loadavg()[0];
log(`${caseName}: traces of ${prompts.length} prompts, ${maxTokens} tokens`);
const tracesFrom = values["traces-from"];
const traces =
    tracesFrom === undefined
        ? await recordTraces()
        : (JSON.parse(readFileSync(resolve(tracesFrom), "utf8")) as {traces: PromptTrace[]}).traces;
const costs: Record<string, {target: CostPoint[]; draft: CostPoint[]}> = {};
for (const streams of streamLevels) {
    log(`${caseName}: step costs at ${streams} batched sequences`);
    costs[streams] = {target: await recordCosts(targetPath, streams, false), draft: await recordCosts(draftPath, streams, true)};
}
mkdirSync(dirname(out), {recursive: true});
writeFileSync(
    out,
    `${JSON.stringify(
        {
            case: caseName,
            target: targetPath.slice(root.length + 1),
            draft: draftPath.slice(root.length + 1),
            machine: benchMachine(),
            date: new Date().toISOString(),
            loadAverage: [loadBefore, loadavg()[0]],
            command: `npx tsx bench/gammaAutoRecord.ts ${process.argv.slice(2).join(" ")}`,
            maxTokens,
            traces,
            costs
        },
        null,
        1
    )}\n`
);
log(`wrote ${out}`);
