/**
 * Issue #34, token trees: tokens per target call and wall-clock of a token tree against chains, on the
 * family and surface pairs, native backend.
 *
 *   npm run bench:tree                                  # family + surface, T = 0, 0.8, 1, gsm8k and family prompts, 200 each
 *   npm run bench:tree -- --quick                       # 10 prompts of the family battery (a test of the script)
 *   npm run bench:tree -- --tree 3x4 --pairs family --temperatures 0 --batteries gsm8k --prompts 300
 *   npm run bench:tree -- --pairs family --draft models/eagle3/model.gguf   # the EAGLE-3 head's trees (a spine with leaf siblings)
 *
 * Arms, interleaved prompt by prompt (the order rotates), the same seed per prompt (prompt i, seed i):
 *   target     target-only decoding (γ = 0): t(1), the cost of one target token
 *   chain-D    strict, a chain as deep as the tree (γ = DEPTH)
 *   chain-N    strict, a chain of as many drafted tokens as the tree (γ = WIDTH × DEPTH)
 *   block-N    block verification of that chain (γ = WIDTH × DEPTH)
 *   tree       the WIDTHxDEPTH tree (strict: recursive rejection sampling; at T = 0 the longest argmax path)
 * Sampled drafts from the draft model (top ids at T = 0), max tokens fixed (EOS ignored), 1 thread.
 *
 * Per arm: tokens per target call (emitted / verification calls, mean over prompts), tokens per second
 * (emitted / decode time, prompt excluded), and the analytic limit of its speed-up over target-only,
 * tokens/call · t(1) / (t_call + t_draft), with t_call its mean target call and t_draft its draft time
 * per call: what the arm would reach if nothing but model calls cost time. "measured / limit" is its
 * measured speed-up over the target arm divided by that limit. The tree's ratio to chain-N (the
 * issue's target: ≥ 1.3 at T = 0 on the family pair) and to chain-D get 95% percentile-bootstrap
 * intervals over prompts (bench/pairedBench.ts).
 *
 * Writes a Markdown table to stdout and everything (per prompt) to .specgate/bench-tree/result-<date>.json.
 */
import {spawnSync} from "node:child_process";
import {loadavg} from "node:os";
import {join} from "node:path";
import {parseArgs} from "node:util";
import {loadModelBackend} from "../src/backend/loadModelBackend.js";
import type {ModelBackend} from "../src/backend/ModelBackend.js";
import type {BatteryItem} from "../src/batteries/BatteryItem.js";
import {loadBattery} from "../src/batteries/loadBattery.js";
import {generate} from "../src/engine/generate.js";
import type {GenerationOptionsInput} from "../src/engine/GenerationOptions.js";
import {parseTreeShape, treeShapeLabel} from "../src/engine/drafters/TreeDraftSession.js";
import {writeJsonResult} from "./benchUtilities.js";
import {benchMachine} from "./cpuInstructionSet.js";
import {batteryAliases, bootstrapRatio, type Interval, mean, modelPairs, selectPrompts} from "./pairedBench.js";

const root = join(import.meta.dirname, "..");
const {values: flags} = parseArgs({
    options: {
        tree: {type: "string", default: "2x4"},
        prompts: {type: "string"},
        pairs: {type: "string", default: "family,surface"},
        temperatures: {type: "string", default: "0,0.8,1"},
        batteries: {type: "string"},
        "max-tokens": {type: "string", default: "32"},
        resamples: {type: "string", default: "2000"},
        "data-dir": {type: "string"},
        out: {type: "string"},
        /** Another draft for every pair (an EAGLE-3 head of their target). */
        draft: {type: "string"},
        quick: {type: "boolean", default: false}
    },
    strict: true
});

const shape = parseTreeShape(flags.tree, "--tree");
const quick = flags.quick;
const promptCount = Number(flags.prompts ?? (quick ? "10" : "200"));
const maxTokens = Number(flags["max-tokens"]);
const resamples = Number(flags.resamples);
for (const [name, value] of [
    ["prompts", promptCount],
    ["max-tokens", maxTokens],
    ["resamples", resamples]
] as const)
    if (!Number.isInteger(value) || value < 2) throw new Error(`--${name} must be an integer ≥ 2, got ${value}`);
const pairNames = flags.pairs.split(",").map((name) => name.trim());
for (const name of pairNames) if (!(name in modelPairs)) throw new Error(`--pairs: unknown pair "${name}"; expected family, surface`);
const temperatures = flags.temperatures.split(",").map((value) => {
    const temperature = Number(value);
    if (!(temperature >= 0)) throw new Error(`--temperatures: ${value} is not a temperature ≥ 0`);
    return temperature;
});
const batteries = (flags.batteries ?? (quick ? "family" : "gsm8k,family")).split(",").map((name) => name.trim());
const drafted = shape.width * shape.depth;

const arms = {
    target: {gamma: 0},
    [`chain-${shape.depth}`]: {gamma: shape.depth},
    [`chain-${drafted}`]: {gamma: drafted},
    [`block-${drafted}`]: {gamma: drafted, policy: {kind: "block"}},
    tree: {tree: shape}
} satisfies Record<string, GenerationOptionsInput>;
type Arm = keyof typeof arms;
const armNames = Object.keys(arms) as Arm[];

interface ArmRecord {
    readonly tokensPerCall: number;
    readonly emittedTokens: number;
    readonly targetCalls: number;
    /** Decode wall time, prompt excluded, ms. */
    readonly decodeMilliseconds: number;
    /** Target verification calls' wall time, ms. */
    readonly verifyMilliseconds: number;
    /** Drafting wall time (draft model calls and their bookkeeping), ms. */
    readonly draftMilliseconds: number;
}

async function runArm(
    target: ModelBackend,
    draft: ModelBackend,
    arm: Arm,
    prompt: readonly number[],
    temperature: number,
    seed: number
): Promise<ArmRecord> {
    const result = await generate(target, draft, prompt, {
        ...arms[arm],
        draftSampling: "sample",
        sampling: {temperature, topK: 0, topP: 1, minP: 0},
        maxTokens,
        ignoreEos: true,
        seed
    });
    const {telemetry} = result;
    return {
        tokensPerCall: telemetry.emittedTokens / Math.max(1, telemetry.steps),
        emittedTokens: telemetry.emittedTokens,
        targetCalls: telemetry.steps,
        decodeMilliseconds: telemetry.time.total - telemetry.time.prompt,
        verifyMilliseconds: telemetry.time.verify,
        draftMilliseconds: telemetry.time.draft
    };
}

type PromptRecord = {id: string; seed: number} & Record<Arm, ArmRecord>;

function summarize(records: readonly PromptRecord[], seed: number) {
    const sum = (arm: Arm, field: keyof ArmRecord): number => records.reduce((total, record) => total + record[arm][field], 0);
    // t(1): target-only decoding's whole time per token (its calls and its per-step work).
    const oneToken = sum("target", "decodeMilliseconds") / sum("target", "emittedTokens");
    const targetRate = 1 / oneToken;
    const perArm = Object.fromEntries(
        armNames.map((arm) => {
            const calls = sum(arm, "targetCalls");
            const tokensPerCall = mean(records.map((record) => record[arm].tokensPerCall));
            const pooled = sum(arm, "emittedTokens") / calls;
            const limit = (pooled * oneToken) / ((sum(arm, "verifyMilliseconds") + sum(arm, "draftMilliseconds")) / calls);
            const speedup = sum(arm, "emittedTokens") / sum(arm, "decodeMilliseconds") / targetRate;
            return [
                arm,
                {
                    tokensPerCall,
                    tokensPerSecond: (1000 * sum(arm, "emittedTokens")) / sum(arm, "decodeMilliseconds"),
                    callMilliseconds: sum(arm, "verifyMilliseconds") / calls,
                    draftMillisecondsPerCall: sum(arm, "draftMilliseconds") / calls,
                    speedup,
                    limit,
                    ofLimit: speedup / limit
                }
            ];
        })
    ) as Record<
        Arm,
        {
            tokensPerCall: number;
            tokensPerSecond: number;
            callMilliseconds: number;
            draftMillisecondsPerCall: number;
            speedup: number;
            limit: number;
            ofLimit: number;
        }
    >;
    const treeTokens = records.map((record) => record.tree.tokensPerCall);
    const versus = (arm: Arm, offset: number): Interval =>
        bootstrapRatio(
            treeTokens,
            records.map((record) => record[arm].tokensPerCall),
            seed + offset,
            resamples
        );
    const wall = (arm: Arm, offset: number): Interval =>
        bootstrapRatio(
            records.map((record) => record[arm].decodeMilliseconds),
            records.map((record) => record.tree.decodeMilliseconds),
            seed + offset,
            resamples
        );
    return {
        oneTokenMilliseconds: oneToken,
        perArm,
        treeOverChainN: versus(`chain-${drafted}`, 0),
        treeOverChainD: versus(`chain-${shape.depth}`, 1),
        treeOverBlockN: versus(`block-${drafted}`, 2),
        /** Wall-clock speed of the tree over chain-N: chain-N's decode time / the tree's. */
        treeSpeedOverChainN: wall(`chain-${drafted}`, 3)
    };
}

const started = new Date();
const machine = {...benchMachine(), loadAverageAtStart: loadavg()};
const git = (...args: string[]): string => {
    const result = spawnSync("git", ["-C", root, ...args], {encoding: "utf8"});
    return result.status === 0 ? result.stdout.trim() : "unknown";
};
const groups: Array<{
    battery: string;
    pair: string;
    temperature: number;
    n: number;
    summary: ReturnType<typeof summarize>;
    prompts: PromptRecord[];
}> = [];
const batteryCache = new Map<string, BatteryItem[]>();
const total = pairNames.length * batteries.length * temperatures.length;
for (const pairName of pairNames) {
    const paths = modelPairs[pairName];
    const options = {backend: "native" as const, threads: 1, gpu: "off" as const};
    const target = await loadModelBackend(join(root, paths.target), options);
    const draft = await loadModelBackend(join(root, flags.draft ?? paths.draft), options);
    const contextSize = Math.min(target.contextSize, draft.contextSize);
    // Warm-up: every arm once, so that context creation and first-call costs stay out of the numbers.
    for (const arm of armNames) await runArm(target, draft, arm, target.tokenize("Question: 1 + 2 =\nAnswer:"), 1, 0);
    for (const battery of batteries) {
        const spec = batteryAliases[battery] ?? battery;
        if (!batteryCache.has(spec)) batteryCache.set(spec, await loadBattery(spec, flags["data-dir"]));
        const prompts = selectPrompts(batteryCache.get(spec)!, target, {count: promptCount, contextSize, maxTokens});
        for (const temperature of temperatures) {
            const records: PromptRecord[] = [];
            for (const [index, prompt] of prompts.items.entries()) {
                const order = armNames.map((_arm, k) => armNames[(k + index) % armNames.length]);
                const record = {id: prompt.id, seed: index} as PromptRecord;
                for (const arm of order) record[arm] = await runArm(target, draft, arm, prompt.tokens, temperature, index);
                records.push(record);
                process.stderr.write(
                    `\r\x1b[K[${groups.length + 1}/${total}] ${battery} ${pairName} T=${temperature}: ${index + 1}/${prompts.items.length}`
                );
            }
            groups.push({
                battery,
                pair: pairName,
                temperature,
                n: records.length,
                summary: summarize(records, groups.length * 10),
                prompts: records
            });
        }
    }
    await draft.dispose();
    await target.dispose();
}
process.stderr.write("\r\x1b[K");

const fixed = (value: number, digits = 2): string => (Number.isFinite(value) ? value.toFixed(digits) : "–");
const interval = (value: Interval): string => `${fixed(value.estimate)} [${fixed(value.low)}, ${fixed(value.high)}]`;
const commit = git("rev-parse", "HEAD").slice(0, 12);
const dirty = git("status", "--porcelain", "--untracked-files=no") !== "";
const lines = [
    `## Token trees (${treeShapeLabel(shape)}) against chains: tokens per target call and wall-clock`,
    "",
    `${started.toISOString()} · commit ${commit}${dirty ? " (uncommitted changes)" : ""} · ${machine.cpu}, ${machine.cores} cores, ` +
        `AVX-512 ${machine.avx512 ? "yes" : "no"} · Node ${machine.node} · load ${machine.loadAverageAtStart.map((value) => value.toFixed(2)).join(" ")}`,
    `native backend (CPU), 1 thread, max tokens ${maxTokens} (EOS ignored), ${promptCount} prompts per group (prompt i, seed i), arms interleaved per prompt` +
        (flags.draft !== undefined ? `, draft ${flags.draft}` : ""),
    "",
    `| battery | pair | T | ${armNames.map((arm) => `${arm} tok/call`).join(" | ")} | tree / chain-${drafted} tok/call [95% CI] | tree / chain-${shape.depth} | ${armNames.map((arm) => `${arm} tok/s`).join(" | ")} | tree speed / chain-${drafted} [95% CI] | ${armNames
        .slice(1)
        .map((arm) => `${arm} speed-up (limit)`)
        .join(" | ")} |`,
    `|---|---|---|${armNames.map(() => "---|").join("")}---|---|${armNames.map(() => "---|").join("")}---|${armNames
        .slice(1)
        .map(() => "---|")
        .join("")}`
];
for (const group of groups) {
    const {perArm} = group.summary;
    lines.push(
        `| ${group.battery} | ${group.pair} | ${group.temperature} | ${armNames.map((arm) => fixed(perArm[arm].tokensPerCall)).join(" | ")} | ` +
            `${interval(group.summary.treeOverChainN)} | ${interval(group.summary.treeOverChainD)} | ` +
            `${armNames.map((arm) => fixed(perArm[arm].tokensPerSecond, 0)).join(" | ")} | ${interval(group.summary.treeSpeedOverChainN)} | ` +
            `${armNames
                .slice(1)
                .map((arm) => `${fixed(perArm[arm].speedup)} (${fixed(perArm[arm].limit)})`)
                .join(" | ")} |`
    );
}
lines.push(
    "",
    `tok/call: emitted tokens / target verification calls, mean over prompts. tok/s: emitted tokens / decode time (prompt excluded), pooled. ` +
        `speed-up: an arm's tok/s over the target arm's; limit: pooled tok/call · t(1) / (its mean target call + its draft time per call), ` +
        `t(1) target-only's time per token — the speed-up if the arm's steps cost their model calls alone (measured / limit is the share of its time in them). Ratios: mean over prompts of the tree's tok/call over the arm's, ` +
        `95% percentile bootstrap over prompts (${resamples} resamples).`
);
const report = lines.join("\n");
console.log(report);
const out = flags.out ?? join(root, ".specgate", "bench-tree", `result-${started.toISOString().replace(/[:.]/g, "-")}.json`);
await writeJsonResult(out, {started: started.toISOString(), commit, dirty, machine, shape, maxTokens, promptCount, groups, report});
console.log(`wrote ${out}`);
