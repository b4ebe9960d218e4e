/**
 * Speed-up against acceptance on perturbed widened twins (src/gguf/widenLlamaModel.ts), beside the
 * analytic model (src/speedup/speedupModel.ts).
 *
 * A twin of the family target computes its function at the cost of a larger shape; `perturb: σ`
 * gives its extra heads, units and layers seeded output weights, so agreement with the family draft
 * falls continuously as σ grows while the cost per token stays the same. For each σ this writes the
 * twin (cached under .specgate/bench-twins/curve/), then runs target-only and strict γ = 4 with the
 * family draft on the family prompts, interleaved one prompt at a time (the first arm alternating),
 * and reports:
 *
 *   acceptance      accepted ÷ drafted tokens
 *   α̂               the i.i.d. per-position acceptance whose f_γ(α̂) − 1 equals the measured accepted
 *                   tokens per step (src/speedup/inferAcceptance.ts)
 *   speed-up        median strict tok/s ÷ median target-only tok/s, 95% bootstrap interval
 *   limit           f_γ(α̂) · t(1) / (γ · t_draft + t(γ+1)) from this run's own costs
 *                   (speedupFromCostCurve); ideal: S(α̂, γ, c) = f_γ(α̂) / (1 + γc) with verification
 *                   as cheap as one step (the memory-bound regime of a GPU)
 *
 *   npx tsx bench/twinAcceptanceCurve.ts [--shape 768,8,24,2048] [--type F16] [--sigmas 0,1,2,3,4,6]
 *       [--threads 2] [--tokens 48] [--reps 2] [--json FILE]
 */
import {existsSync, readFileSync} from "node:fs";
import {loadavg} from "node:os";
import {mkdir, writeFile} from "node:fs/promises";
import {dirname, join, resolve} from "node:path";
import {fileURLToPath} from "node:url";
import {NativeBackend} from "../src/backend/NativeBackend.js";
import {generate} from "../src/engine/generate.js";
import type {GenerationTelemetry} from "../src/engine/GenerationTelemetry.js";
import {GgmlTensorType} from "../src/gguf/GgmlTensorType.js";
import {widenLlamaModel} from "../src/gguf/widenLlamaModel.js";
import {inferAcceptance} from "../src/speedup/inferAcceptance.js";
import {expectedTokensPerStep, speedupFromCostCurve} from "../src/speedup/speedupModel.js";
import {benchMachine} from "./cpuInstructionSet.js";
import {formatInterval, median, medianRatioInterval} from "./speedIntervals.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const argv = process.argv.slice(2);
const value = (name: string): string | undefined => {
    const index = argv.indexOf(name);
    return index >= 0 ? argv[index + 1] : undefined;
};
const [embeddingLength, blockCount, headCount, feedForwardLength] = (value("--shape") ?? "768,8,24,2048").split(",").map(Number);
const typeName = value("--type") ?? "F16";
const weightType = ({F32: GgmlTensorType.F32, F16: GgmlTensorType.F16, Q8_0: GgmlTensorType.Q8_0} as Record<string, GgmlTensorType>)[
    typeName
];
if (weightType === undefined) throw new Error(`--type: expected F32, F16 or Q8_0, got ${typeName}`);
const sigmas = (value("--sigmas") ?? "0,1,2,3,4,6").split(",").map(Number);
const threads = Number(value("--threads") ?? 2);
const maxTokens = Number(value("--tokens") ?? 48);
const reps = Number(value("--reps") ?? 2);
const jsonPath = value("--json") ?? join(root, ".specgate/bench-twins/curve/result.json");
const gamma = 4;
const directory = join(root, ".specgate/bench-twins/curve");
const prompts = readFileSync(join(root, "examples/family-prompts.jsonl"), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => (JSON.parse(line) as {prompt: string}).prompt);

const log = (text: string): void => void process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${text}\n`);
const fixed = (number: number, digits = 2): string => (Number.isFinite(number) ? number.toFixed(digits) : "–");

async function twinFor(sigma: number): Promise<string> {
    const path = join(directory, `target-d${embeddingLength}x${blockCount}-${typeName.toLowerCase()}-sigma${sigma}.gguf`);
    if (existsSync(path)) return path;
    await mkdir(directory, {recursive: true});
    await widenLlamaModel({
        source: join(root, "models/target/model.gguf"),
        shape: {embeddingLength, blockCount, headCount, feedForwardLength},
        weightType,
        perturb: sigma,
        seed: 1,
        outputPath: path
    });
    return path;
}

interface CurveRow {
    sigma: number;
    targetOnly: number[];
    strict: number[];
    drafted: number;
    accepted: number;
    steps: number;
    drafts: number;
    emitted: number;
    t1: number;
    tVerify: number;
    tDraft: number;
}

async function measure(sigma: number, draft: NativeBackend): Promise<CurveRow> {
    const target = await NativeBackend.load(await twinFor(sigma), {threads});
    const row: CurveRow = {
        sigma,
        targetOnly: [],
        strict: [],
        drafted: 0,
        accepted: 0,
        steps: 0,
        drafts: 0,
        emitted: 0,
        t1: 0,
        tVerify: 0,
        tDraft: 0
    };
    const t1: number[] = [];
    const tVerify: number[] = [];
    const tDraft: number[] = [];
    const run = async (prompt: string, seed: number, speculative: boolean, tokens = maxTokens): Promise<GenerationTelemetry> => {
        const promptTokens = target.tokenize(prompt);
        if (target.bosToken != null && promptTokens[0] !== target.bosToken) promptTokens.unshift(target.bosToken);
        const result = await generate(target, speculative ? draft : undefined, promptTokens, {
            policy: {kind: "strict"},
            gamma: speculative ? gamma : 0,
            sampling: {temperature: 0, topK: 0, topP: 1, minP: 0},
            maxTokens: tokens,
            seed,
            ignoreEos: true
        });
        return result.telemetry;
    };
    try {
        await run(prompts[0], 0, true, 8);
        let index = 0;
        for (let rep = 0; rep < reps; rep++)
            for (const prompt of prompts) {
                const order = index++ % 2 === 0 ? [false, true] : [true, false];
                for (const speculative of order) {
                    const telemetry = await run(prompt, index, speculative);
                    const curve = telemetry.costCurve();
                    if (!speculative) {
                        row.targetOnly.push(telemetry.tokensPerSecond);
                        if (curve[1] !== undefined) t1.push(curve[1]);
                        continue;
                    }
                    row.strict.push(telemetry.tokensPerSecond);
                    row.drafted += telemetry.draftTokens;
                    row.accepted += telemetry.acceptedTokens;
                    row.steps += telemetry.steps;
                    row.drafts += telemetry.drafts;
                    row.emitted += telemetry.emittedTokens;
                    if (curve[gamma + 1] !== undefined) tVerify.push(curve[gamma + 1]);
                    const draftToken = telemetry.toJSON().draftTokenMilliseconds;
                    if (draftToken != null) tDraft.push(draftToken);
                }
            }
    } finally {
        await target.dispose();
    }
    row.t1 = median(t1);
    row.tVerify = median(tVerify);
    row.tDraft = median(tDraft);
    return row;
}

const machine = benchMachine();
const started = new Date();
const draft = await NativeBackend.load(join(root, "models/draft/model.gguf"), {threads});
const rows: CurveRow[] = [];
try {
    for (const sigma of sigmas) {
        const row = await measure(sigma, draft);
        rows.push(row);
        log(
            `σ = ${sigma}: acceptance ${fixed(row.accepted / row.drafted)}, speed-up ${fixed(median(row.strict) / median(row.targetOnly))}`
        );
    }
} finally {
    await draft.dispose();
}

const lines = [
    `# Speed-up against acceptance: perturbed twins of the family target`,
    "",
    `Twin d${embeddingLength}×${blockCount}, ${headCount} heads of 32, FF ${feedForwardLength}, ${typeName}; family draft; strict γ = ${gamma}, T = 0, ` +
        `${maxTokens} tokens × ${prompts.length} family prompts × ${reps} rounds per arm, EOS ignored, arms interleaved; ${threads} threads. ` +
        `${machine.cores}-core ${machine.cpu} (${machine.instructionSet.join(", ")}). ${started.toISOString()}, load average ${loadavg()[0].toFixed(1)} at the start.`,
    "",
    "| σ | acceptance | α̂ (i.i.d.) | tokens/step | t(1) ms | t(5)/t(1) | draft token / t(1) | speed-up [95%] | limit (this run's costs) | measured/limit | ideal S(α̂, γ, c) |",
    "|---|---|---|---|---|---|---|---|---|---|---|"
];
const record = rows.map((row) => {
    const acceptedPerStep = row.drafts === 0 ? 0 : row.accepted / row.steps;
    const alpha = inferAcceptance(Math.min(gamma, acceptedPerStep), gamma);
    const speedup = medianRatioInterval(row.strict, row.targetOnly);
    const limit = speedupFromCostCurve(alpha, gamma, {targetTimeOne: row.t1, targetTimeVerify: row.tVerify, draftTime: row.tDraft});
    const ideal = expectedTokensPerStep(alpha, gamma) / (1 + (gamma * row.tDraft) / row.t1);
    lines.push(
        `| ${row.sigma} | ${fixed(row.accepted / row.drafted)} | ${fixed(alpha)} | ${fixed(row.emitted / row.steps)} | ${fixed(row.t1, 3)} | ` +
            `${fixed(row.tVerify / row.t1)} | ${fixed(row.tDraft / row.t1, 3)} | ${formatInterval(speedup, 2, "×")} | ${fixed(limit)}× | ` +
            `${fixed(speedup.estimate / limit)} | ${fixed(ideal)}× |`
    );
    return {...row, alpha, speedup, limit, ideal};
});
lines.push(
    "",
    `Command: \`npx tsx bench/twinAcceptanceCurve.ts --shape ${embeddingLength},${blockCount},${headCount},${feedForwardLength} --type ${typeName} ` +
        `--sigmas ${sigmas.join(",")} --threads ${threads} --tokens ${maxTokens} --reps ${reps}\``
);
await mkdir(dirname(resolve(jsonPath)), {recursive: true});
await writeFile(jsonPath, `${JSON.stringify({date: started.toISOString(), machine, rows: record}, null, 1)}\n`);
process.stdout.write(`${lines.join("\n")}\n`);
