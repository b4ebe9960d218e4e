/**
 * The EAGLE-3 head's own cost per draft step for N target sequences: one shared head context drafting
 * for all N in one call (Eagle3HeadGroup: catch-ups together, one decode per draft iteration), against
 * N heads of their own drafting one after another (what serve did before, and does with
 * batchedHeads: false). Each step redrafts γ greedy ids after the target's last token (a verification
 * that kept none: one catch-up pair per sequence), the same work on both sides; with --sampled, γ
 * tokens drawn from the head's rows at temperature 1 with fixed uniforms instead. The two sides
 * alternate round by round, so load from other processes falls on both; reported per N: the median
 * over rounds of the wall and the process CPU time per step (CPU time, unlike wall time, hardly moves
 * when other processes share the cores), and their ratio.
 *
 *   npx tsx bench/eagle3HeadBatchBench.ts [--head models/eagle3/model.gguf] [--target models/target/model.gguf]
 *       [--streams 1,4,16] [--gamma 4] [--steps 50] [--rounds 5] [--threads 1] [--sampled]
 */
import {cpus, loadavg} from "node:os";
import {parseArgs} from "node:util";
import {Eagle3HeadBackend} from "../src/backend/Eagle3HeadBackend.js";
import {type NativeContextHandle, NativeOutputMode, nativeAddon, type NativeModelHandle} from "../src/backend/nativeAddon.js";
import {readModelHeader} from "../src/backend/readModelHeader.js";

const {values} = parseArgs({
    options: {
        head: {type: "string", default: "models/eagle3/model.gguf"},
        target: {type: "string", default: "models/target/model.gguf"},
        streams: {type: "string", default: "1,4,16"},
        gamma: {type: "string", default: "4"},
        steps: {type: "string", default: "50"},
        rounds: {type: "string", default: "5"},
        threads: {type: "string", default: "1"},
        sampled: {type: "boolean", default: false}
    }
});
const gamma = Number(values.gamma);
const steps = Number(values.steps);
const rounds = Number(values.rounds);
const threads = Number(values.threads);
const contextSize = 256;
const promptLength = 48;

const median = (samples: readonly number[]) => [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)];
const cpuMilliseconds = () => {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1000;
};

/** Wall and CPU milliseconds per step of `step`, run `steps` times after one warm-up step. */
async function timed(step: () => Promise<unknown>): Promise<{wall: number; cpu: number}> {
    await step();
    const [wall, cpu] = [performance.now(), cpuMilliseconds()];
    for (let index = 0; index < steps; index++) await step();
    return {wall: (performance.now() - wall) / steps, cpu: (cpuMilliseconds() - cpu) / steps};
}

/** A target context of `streams` sequences, each holding a prompt of its own with the head's layers captured. */
async function prefilledTarget(model: NativeModelHandle, layers: readonly number[], streams: number, vocabulary: number) {
    const addon = nativeAddon("cpu");
    const context: NativeContextHandle = new addon.NativeContext(model, {
        contextSize,
        sequences: streams,
        batchSize: contextSize * streams,
        threads,
        captureLayers: Int32Array.from(layers)
    });
    const histories: Int32Array[] = [];
    for (let sequence = 0; sequence < streams; sequence++) {
        const tokens = Int32Array.from({length: promptLength}, (_value, index) => (7 + 31 * index + 101 * sequence) % vocabulary);
        await context.decode(
            tokens,
            new Int32Array(promptLength).fill(sequence),
            Int32Array.from(tokens, (_token, index) => index),
            [{outputs: new Int32Array(0), mode: NativeOutputMode.None}]
        );
        histories.push(Int32Array.of(...tokens, (13 + sequence) % vocabulary));
    }
    return {context, histories};
}

async function main(): Promise<void> {
    const addon = nativeAddon("cpu");
    const head = await Eagle3HeadBackend.load(values.head, {threads});
    const {vocabularySize} = readModelHeader(values.target);
    const target = new addon.NativeModel(values.target);
    const headModel = new addon.NativeModel(values.head);
    process.stdout.write(
        `EAGLE-3 head per draft step (γ = ${gamma}, ${values.sampled ? "sampled" : "greedy"} drafts, ${steps} steps × ${rounds} rounds, ${threads} thread(s)), ${cpus()[0]?.model}, load ${loadavg()
            .map((value) => value.toFixed(2))
            .join(" ")}\n`
    );
    process.stdout.write(
        "| streams | shared: wall ms | CPU ms | own heads: wall ms | CPU ms | wall ratio | CPU ratio |\n|---|---|---|---|---|---|---|\n"
    );
    for (const streams of values.streams.split(",").map(Number)) {
        const {context, histories} = await prefilledTarget(target, head.targetLayers, streams, vocabularySize);
        const group = new addon.Eagle3HeadGroup(headModel, context, {contextSize, threads, slots: streams});
        const slots = histories.map((_history, sequence) => group.open(sequence));
        const own = histories.map((_history, sequence) => new addon.Eagle3Head(headModel, context, sequence, {contextSize, threads}));
        const ids = histories.map(() => new Int32Array(gamma));
        const size = Math.min(vocabularySize, head.vocabularySize);
        const draw = {
            uniforms: Float64Array.from({length: gamma}, (_value, index) => (0.37 + 0.29 * index) % 1),
            options: {sampling: {temperature: 1, topK: 0, topP: 1, minP: 0}, size, minConfidence: 0},
            probabilities: new Float64Array(gamma * size),
            logits: new Float64Array(gamma * size)
        };
        const shared = () =>
            group.draft(
                slots.map((slot, index) =>
                    values.sampled
                        ? {slot, history: histories[index], ...draw, ids: ids[index]}
                        : {slot, history: histories[index], count: gamma, destination: ids[index]}
                )
            );
        const alone = async () => {
            for (const [index, each] of own.entries())
                await (values.sampled
                    ? each.drawDrafts(histories[index], draw.uniforms, draw.options, ids[index], draw.probabilities, draw.logits)
                    : each.draft(histories[index], gamma, ids[index]));
        };
        const samples = {shared: [] as Array<{wall: number; cpu: number}>, alone: [] as Array<{wall: number; cpu: number}>};
        for (let round = 0; round < rounds; round++) {
            const order = round % 2 === 0 ? (["shared", "alone"] as const) : (["alone", "shared"] as const);
            for (const side of order) samples[side].push(await timed(side === "shared" ? shared : alone));
        }
        const summary = (side: "shared" | "alone") => ({
            wall: median(samples[side].map((sample) => sample.wall)),
            cpu: median(samples[side].map((sample) => sample.cpu))
        });
        const [together, apart] = [summary("shared"), summary("alone")];
        process.stdout.write(
            `| ${streams} | ${together.wall.toFixed(2)} | ${together.cpu.toFixed(2)} | ${apart.wall.toFixed(2)} | ${apart.cpu.toFixed(2)} | ` +
                `${(apart.wall / together.wall).toFixed(2)}× | ${(apart.cpu / together.cpu).toFixed(2)}× |\n`
        );
        for (const each of own) each.dispose();
        group.dispose();
        context.dispose();
    }
    process.stdout.write(
        `load after: ${loadavg()
            .map((value) => value.toFixed(2))
            .join(" ")}\n`
    );
    headModel.dispose();
    target.dispose();
    await head.dispose();
}

await main();
