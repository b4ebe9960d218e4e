/**
 * Issue #34, first target: `block` (block verification, Sun et al., "Block Verification Accelerates
 * Speculative Decoding", ICLR 2025) keeps more tokens per target call than `strict` on every battery at
 * T ≥ 0.8, and is never slower in wall-clock by more than noise.
 *
 *   npx tsx bench/blockVerification.ts                 # every battery, both pairs, T = 0.8 and 1, 200 prompts
 *   npx tsx bench/blockVerification.ts --quick         # 20 prompts of gsm8k (a test of the script)
 *   npx tsx bench/blockVerification.ts --prompts 300 --pairs family --temperatures 1 --batteries gsm8k,family
 *
 * Design. For each battery × model pair × temperature, the same N prompts run under `strict` and under
 * `block` with the same seed (prompt i, seed i; the first step's drafts are then identical), γ = 4,
 * sampled drafts from the draft model, a fixed number of generated tokens (EOS ignored unless
 * --stop-at-eos: both policies are lossless, so the text past EOS is the target's too, and every
 * generation then has the same length). The arms are interleaved prompt by prompt, their order
 * alternating (even prompts strict first, odd ones block first), on the native backend, 1 thread.
 *
 * Per prompt and arm: tokens per target call = emitted tokens / target verification calls (telemetry
 * `steps`: the prompt's own decode is not a step), and the decode's wall time (telemetry total − prompt,
 * minus the time this script spends on the analytic expectations below).
 *
 * Per group: mean tokens per call of each arm; the paired mean difference (block − strict) with a 95%
 * paired-t interval (@stdlib's Student-t quantile); the relative gain (ratio of the means − 1) and the wall-clock ratio
 * block/strict (ratio of the mean decode times) with 95% percentile-bootstrap intervals over prompts
 * (pairs resampled together; src/statistics/stratifiedBootstrap, 2000 resamples, fixed seed).
 *
 * Analytic limit: on every verification step the script also computes, from the step's own target and
 * draft rows and its drafted block x, the exact expected tokens that step yields under each rule, the
 * randomness of the verifier integrated out (src/simulate/analyticAcceptance with the draft ids given):
 * strict 1 + Σ_k Π_{i≤k} min(1, p_i(x_i)/q_i(x_i)), block 1 + Σ_i P(τ ≥ i | x). Since x was drawn from
 * the draft's rows, its mean over steps is an unbiased, lower-variance estimate of tokens per step (not
 * capped by max tokens, so a little above the measured tokens per call when the last step is cut short).
 * (Checked: averaged over every block x with weight Π q_i(x_i) it reproduces `specgate simulate`'s exact
 * 3.6418 / 3.8788 on examples/block-step.json.) Both rules are computed on every step of both arms (the
 * overhead is the same in each and is subtracted from the wall time), and the table compares them on
 * the SAME steps, paired per prompt: the arms' trajectories diverge after their first rejection, and
 * that trajectory noise, not the verifier, dominates the measured difference.
 *
 * Writes a Markdown table to stdout and everything (per prompt) to .specgate/bench-block/result-<date>.json.
 */
import {benchMachine} from "./cpuInstructionSet.js";
import {spawnSync} from "node:child_process";
import {mkdir} from "node:fs/promises";
import {loadavg} from "node:os";
import {join} from "node:path";
import {parseArgs} from "node:util";
import {allBatteries, batteryAliases, bootstrapRatio, mean, modelPairs, pairedT, selectPrompts} from "./pairedBench.js";
import {loadModelBackend} from "../src/backend/loadModelBackend.js";
import type {ModelBackend} from "../src/backend/ModelBackend.js";
import type {BatteryItem} from "../src/batteries/BatteryItem.js";
import {loadBattery} from "../src/batteries/loadBattery.js";
import {writeJsonOutput} from "../src/cli/writeJsonOutput.js";
import {generate} from "../src/engine/generate.js";
import {createPolicy} from "../src/policies/createPolicy.js";
import type {PolicyConfig} from "../src/policies/policyConfigSchema.js";
import type {VerificationPolicy, VerificationStep} from "../src/policies/VerificationPolicy.js";
import {analyticAcceptance} from "../src/simulate/analyticAcceptance.js";
import {expectedTokensPerStepFromPositions} from "../src/speedup/speedupModel.js";

const root = join(import.meta.dirname, "..");
const arms = ["strict", "block"] as const;
type Arm = (typeof arms)[number];

const {values: flags} = parseArgs({
    options: {
        prompts: {type: "string"},
        pairs: {type: "string", default: "family,surface"},
        temperatures: {type: "string", default: "0.8,1"},
        batteries: {type: "string"},
        "max-tokens": {type: "string", default: "32"},
        gamma: {type: "string", default: "4"},
        seed: {type: "string", default: "0"},
        resamples: {type: "string", default: "2000"},
        "stop-at-eos": {type: "boolean", default: false},
        "data-dir": {type: "string"},
        out: {type: "string"},
        quick: {type: "boolean", default: false}
    },
    strict: true
});

function integerFlag(value: string, name: string, minimum: number): number {
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed < minimum) throw new Error(`--${name} must be an integer ≥ ${minimum}, got "${value}"`);
    return parsed;
}
const quick = flags.quick;
const promptCount = integerFlag(flags.prompts ?? (quick ? "20" : "200"), "prompts", 2);
const pairNames = flags.pairs.split(",").map((name) => name.trim());
for (const name of pairNames) if (!(name in modelPairs)) throw new Error(`--pairs: unknown pair "${name}"; expected family, surface`);
const temperatures = flags.temperatures.split(",").map((value) => {
    const temperature = Number(value);
    if (!(temperature > 0)) throw new Error(`--temperatures: ${value} is not a temperature > 0`);
    return temperature;
});
const batteries = (flags.batteries ?? (quick ? "gsm8k" : allBatteries.join(",")))
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
const maxTokens = integerFlag(flags["max-tokens"], "max-tokens", 1);
const gamma = integerFlag(flags.gamma, "gamma", 1);
const seedBase = integerFlag(flags.seed, "seed", 0);
const resamples = integerFlag(flags.resamples, "resamples", 100);
const ignoreEos = !flags["stop-at-eos"];
const threads = 1;

// ---- the machine -------------------------------------------------------------------------------
function git(...args: string[]): string {
    const result = spawnSync("git", ["-C", root, ...args], {encoding: "utf8"});
    return result.status === 0 ? result.stdout.trim() : "unknown";
}
const started = new Date();
const machine = {...benchMachine(), loadAverageAtStart: loadavg()};
const commit = git("rev-parse", "HEAD");
const dirty = git("status", "--porcelain", "--untracked-files=no") !== "";

// ---- one generation ------------------------------------------------------------------------------
interface StepAnalytics {
    /** Σ over steps of the exact expected tokens of the step under strict's rule, given its drafts. */
    strict: number;
    block: number;
    steps: number;
    /** Steps whose expectation could not be computed (no draft rows). */
    missing: number;
    milliseconds: number;
}
/** The policy, with the exact expected tokens of every step under both rules recorded before it decides. */
function instrumented(inner: VerificationPolicy, vocabularySize: number, sink: {current: StepAnalytics}): VerificationPolicy {
    const strictConfig: PolicyConfig = {kind: "strict"};
    const blockConfig: PolicyConfig = {kind: "block"};
    return {
        kind: inner.kind,
        lossless: inner.lossless,
        readsTargetLogits: inner.readsTargetLogits,
        releasesRows: inner.releasesRows,
        verify(step: VerificationStep, chance) {
            const start = performance.now();
            const analytics = sink.current;
            const draftTokens = Int32Array.from(step.draftTokens);
            if (draftTokens.length === 0) {
                analytics.strict += 1;
                analytics.block += 1;
                analytics.steps++;
            } else if (step.draftProbs == null) {
                analytics.missing++;
            } else {
                const input = {
                    vocabularySize,
                    gamma: draftTokens.length,
                    targetProbs: step.targetProbs as Float64Array[],
                    targetLogits: [],
                    draftProbs: step.draftProbs as Float64Array[],
                    draftTokens
                };
                const strict = analyticAcceptance({...input, policy: strictConfig});
                const block = analyticAcceptance({...input, policy: blockConfig});
                if (strict == null || block == null) analytics.missing++;
                else {
                    analytics.strict += expectedTokensPerStepFromPositions(strict.perPosition);
                    analytics.block += expectedTokensPerStepFromPositions(block.perPosition);
                    analytics.steps++;
                }
            }
            analytics.milliseconds += performance.now() - start;
            return inner.verify(step, chance);
        }
    };
}

interface ArmRecord {
    readonly tokensPerCall: number;
    readonly emittedTokens: number;
    readonly targetCalls: number;
    readonly draftTokens: number;
    readonly acceptedTokens: number;
    /** Decode wall time (prompt excluded, the analytic bookkeeping subtracted), ms. */
    readonly decodeMilliseconds: number;
    /** llama_decode time of the target, ms (the native backend measures it). */
    readonly targetDecodeMilliseconds: number;
    readonly analyticMilliseconds: number;
    /** Mean over this generation's steps of the exact expected tokens per step under strict's / block's rule. */
    readonly analyticStrict: number;
    readonly analyticBlock: number;
    readonly finishReason: string;
}

interface Models {
    readonly target: ModelBackend;
    readonly draft: ModelBackend;
    readonly policies: Record<Arm, VerificationPolicy>;
    readonly sink: {current: StepAnalytics};
}

async function runArm(models: Models, arm: Arm, prompt: readonly number[], temperature: number, seed: number): Promise<ArmRecord> {
    const analytics: StepAnalytics = {strict: 0, block: 0, steps: 0, missing: 0, milliseconds: 0};
    models.sink.current = analytics;
    const result = await generate(
        models.target,
        models.draft,
        prompt,
        {
            policy: {kind: arm},
            gamma,
            draftSampling: "sample",
            sampling: {temperature, topK: 0, topP: 1, minP: 0},
            maxTokens,
            ignoreEos,
            seed
        },
        {policy: models.policies[arm]}
    );
    const telemetry = result.telemetry;
    return {
        tokensPerCall: telemetry.steps === 0 ? 0 : telemetry.emittedTokens / telemetry.steps,
        emittedTokens: telemetry.emittedTokens,
        targetCalls: telemetry.steps,
        draftTokens: telemetry.draftTokens,
        acceptedTokens: telemetry.acceptedTokens,
        decodeMilliseconds: telemetry.time.total - telemetry.time.prompt - analytics.milliseconds,
        targetDecodeMilliseconds: telemetry.backend.targetDecode,
        analyticMilliseconds: analytics.milliseconds,
        analyticStrict: analytics.steps === 0 ? NaN : analytics.strict / analytics.steps,
        analyticBlock: analytics.steps === 0 ? NaN : analytics.block / analytics.steps,
        finishReason: result.finishReason
    };
}

async function openPair(name: string): Promise<Models> {
    const paths = modelPairs[name];
    const options = {backend: "native" as const, threads, gpu: "off" as const};
    const target = await loadModelBackend(join(root, paths.target), options);
    const draft = await loadModelBackend(join(root, paths.draft), options);
    const sink = {current: {strict: 0, block: 0, steps: 0, missing: 0, milliseconds: 0}};
    const policies = Object.fromEntries(
        arms.map((arm) => [
            arm,
            instrumented(createPolicy({kind: arm}, {vocabularySize: target.vocabularySize}), target.vocabularySize, sink)
        ])
    ) as Record<Arm, VerificationPolicy>;
    return {target, draft, policies, sink};
}

// ---- the run -------------------------------------------------------------------------------------
interface GroupResult {
    battery: string;
    pair: string;
    temperature: number;
    n: number;
    distinctItems: number;
    batteryItems: number;
    cutPrompts: number;
    contextSize: number;
    elapsedSeconds: number;
    summary: ReturnType<typeof summarize>;
    prompts: Array<{id: string; seed: number; promptTokens: number; cutTokens: number; first: Arm} & Record<Arm, ArmRecord>>;
}

function summarize(records: GroupResult["prompts"], seed: number) {
    const perArm = (arm: Arm) => {
        const of = (field: keyof ArmRecord) => records.map((record) => record[arm][field] as number);
        const drafted = of("draftTokens").reduce((a, b) => a + b, 0);
        return {
            tokensPerCall: mean(of("tokensPerCall")),
            /** Σ emitted / Σ target calls: the per-step expectation the analytic figures estimate (a mean of per-prompt ratios weighs steps unevenly). */
            pooledTokensPerCall: of("emittedTokens").reduce((a, b) => a + b, 0) / of("targetCalls").reduce((a, b) => a + b, 0),
            acceptanceRate: drafted === 0 ? 0 : of("acceptedTokens").reduce((a, b) => a + b, 0) / drafted,
            meanDecodeMilliseconds: mean(of("decodeMilliseconds")),
            meanTargetDecodeMilliseconds: mean(of("targetDecodeMilliseconds")),
            analyticStrict: mean(of("analyticStrict").filter(Number.isFinite)),
            analyticBlock: mean(of("analyticBlock").filter(Number.isFinite)),
            notAtMaxTokens: records.filter((record) => record[arm].emittedTokens !== maxTokens).length
        };
    };
    const strict = perArm("strict");
    const block = perArm("block");
    const strictTokens = records.map((record) => record.strict.tokensPerCall);
    const blockTokens = records.map((record) => record.block.tokensPerCall);
    const difference = pairedT(records.map((record) => record.block.tokensPerCall - record.strict.tokensPerCall));
    const gain = bootstrapRatio(blockTokens, strictTokens, seed, resamples);
    const wallRatio = bootstrapRatio(
        records.map((record) => record.block.decodeMilliseconds),
        records.map((record) => record.strict.decodeMilliseconds),
        seed + 1,
        resamples
    );
    // The analytic gain on the same steps: block's rule against strict's on every step of both arms
    // (each arm's per-step mean, the two arms averaged), paired per prompt.
    const sameSteps = (rule: "analyticStrict" | "analyticBlock") =>
        mean(records.map((record) => (record.strict[rule] + record.block[rule]) / 2).filter(Number.isFinite));
    const analyticDifference = pairedT(
        records.map(
            (record) =>
                (record.strict.analyticBlock + record.block.analyticBlock - record.strict.analyticStrict - record.block.analyticStrict) / 2
        )
    );
    return {
        strict,
        block,
        difference,
        relativeGain: {estimate: gain.estimate - 1, low: gain.low - 1, high: gain.high - 1},
        wallRatio,
        analyticSameSteps: {strict: sameSteps("analyticStrict"), block: sameSteps("analyticBlock"), difference: analyticDifference},
        analyticKeepsMore: analyticDifference.low > 0,
        blockKeepsMore: difference.low > 0,
        blockSlowerBeyondNoise: wallRatio.low > 1
    };
}

const groups: GroupResult[] = [];
const totalGroups = batteries.length * pairNames.length * temperatures.length;
const runStart = performance.now();
const batteryCache = new Map<string, BatteryItem[]>();
for (const pairName of pairNames) {
    const models = await openPair(pairName);
    const contextSize = Math.min(models.target.contextSize, models.draft.contextSize);
    // Warm-up (untimed): page in the weights and the addon's paths.
    for (let repeat = 0; repeat < 2; repeat++)
        for (const arm of arms) await runArm(models, arm, models.target.tokenize("Question: 1 + 2 =\nAnswer:"), 1, repeat);
    for (const battery of batteries) {
        const spec = batteryAliases[battery] ?? battery;
        if (!batteryCache.has(spec)) batteryCache.set(spec, await loadBattery(spec, flags["data-dir"]));
        const promptSet = selectPrompts(batteryCache.get(spec)!, models.target, {count: promptCount, contextSize, maxTokens});
        for (const temperature of temperatures) {
            const groupStart = performance.now();
            const records: GroupResult["prompts"] = [];
            for (const [index, prompt] of promptSet.items.entries()) {
                const seed = seedBase + index;
                const order: readonly Arm[] = index % 2 === 0 ? ["strict", "block"] : ["block", "strict"];
                const result = {} as Record<Arm, ArmRecord>;
                for (const arm of order) result[arm] = await runArm(models, arm, prompt.tokens, temperature, seed);
                records.push({
                    id: prompt.id,
                    seed,
                    promptTokens: prompt.tokens.length,
                    cutTokens: prompt.cutTokens,
                    first: order[0],
                    ...result
                });
                process.stderr.write(
                    `\r\x1b[K[${groups.length + 1}/${totalGroups}] ${battery} ${pairName} T=${temperature}: ${index + 1}/${promptSet.items.length}`
                );
            }
            groups.push({
                battery,
                pair: pairName,
                temperature,
                n: records.length,
                distinctItems: promptSet.distinctItems,
                batteryItems: promptSet.batteryItems,
                cutPrompts: promptSet.cutPrompts,
                contextSize,
                elapsedSeconds: (performance.now() - groupStart) / 1000,
                summary: summarize(records, seedBase + groups.length * 2),
                prompts: records
            });
        }
    }
    await models.draft.dispose();
    await models.target.dispose();
}
process.stderr.write("\r\x1b[K");
const elapsedSeconds = (performance.now() - runStart) / 1000;

// ---- report --------------------------------------------------------------------------------------
const fixed = (value: number, digits = 3) => (Number.isFinite(value) ? value.toFixed(digits) : "–");
const signed = (value: number, digits = 3) => (value >= 0 ? "+" : "") + fixed(value, digits);
const percent = (value: number) => signed(100 * value, 1) + "%";
const lines = [
    `## block vs strict: tokens per target call and wall-clock (issue #34)`,
    "",
    `${started.toISOString()} · commit ${commit.slice(0, 12)}${dirty ? " (uncommitted changes)" : ""} · ${machine.cpu}, ${machine.cores} cores, ` +
        `AVX-512 ${machine.avx512 ? "yes" : "no"} (${machine.instructionSet.join(" ") || "none listed"}) · ${machine.platform}, Node ${machine.node} · ` +
        `load average ${machine.loadAverageAtStart.map((value) => value.toFixed(2)).join(" ")}`,
    `native backend, ${threads} thread, γ = ${gamma}, sampled drafts (model drafter), max tokens ${maxTokens}` +
        `${ignoreEos ? " (EOS ignored: every generation is max tokens long)" : " (stops at EOS)"}, ${promptCount} prompts per group (prompt i, seed ${seedBase} + i), ` +
        `arms interleaved per prompt, order alternating; ${fixed(elapsedSeconds, 0)} s in all`,
    "",
    "| battery | pair | T | n (distinct) | cut | strict tok/call | block tok/call | Δ tok/call [95% CI, paired t] | gain [95% CI, bootstrap] | analytic, same steps: strict → block, Δ [95% CI, paired t] | wall block/strict [95% CI, bootstrap] | s |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
];
for (const group of groups) {
    const {summary} = group;
    const analytic = summary.analyticSameSteps;
    const analyticGain = analytic.difference.estimate / analytic.strict;
    lines.push(
        `| ${group.battery} | ${group.pair} | ${group.temperature} | ${group.n} (${group.distinctItems}) | ${group.cutPrompts} | ` +
            `${fixed(summary.strict.tokensPerCall)} | ${fixed(summary.block.tokensPerCall)} | ` +
            `${signed(summary.difference.estimate)} [${signed(summary.difference.low)}, ${signed(summary.difference.high)}]${summary.blockKeepsMore ? "" : " ✗"} | ` +
            `${percent(summary.relativeGain.estimate)} [${percent(summary.relativeGain.low)}, ${percent(summary.relativeGain.high)}] | ` +
            `${fixed(analytic.strict)} → ${fixed(analytic.block)} (${percent(analyticGain)}), ${signed(analytic.difference.estimate, 4)} ` +
            `[${signed(analytic.difference.low, 4)}, ${signed(analytic.difference.high, 4)}]${summary.analyticKeepsMore ? "" : " ✗"} | ` +
            `${fixed(summary.wallRatio.estimate)} [${fixed(summary.wallRatio.low)}, ${fixed(summary.wallRatio.high)}]${summary.blockSlowerBeyondNoise ? " ✗" : ""} | ` +
            `${fixed(group.elapsedSeconds, 0)} |`
    );
}
const kept = groups.filter((group) => group.summary.blockKeepsMore).length;
const slower = groups.filter((group) => group.summary.blockSlowerBeyondNoise).length;
const generations = groups.reduce((sum, group) => sum + 2 * group.n, 0);
lines.push(
    "",
    `tok/call: emitted tokens / target verification calls per prompt (prompt decode excluded), mean over prompts. ` +
        `n (distinct): prompts (distinct battery items; fewer when a battery is cycled with new seeds). cut: prompts cut from the left to fit the ` +
        `${[...new Set(groups.map((group) => group.contextSize))].join("/")}-token context (BOS + prompt + max tokens + 1 must fit). gain: mean(block)/mean(strict) − 1. analytic, same steps: on every verification step of ` +
        `both arms, the exact expected tokens of the step given its drafted block and rows, the verifier's coins integrated out, under strict's ` +
        `rule and under block's (the drafts were drawn from the draft's rows, so the mean is the expected tokens per call; not capped by max tokens); ` +
        `Δ = block − strict on identical steps, paired per prompt, which removes the trajectory noise that dominates the measured Δ. ` +
        `wall: mean decode time ratio (prompt excluded). ✗: Δ's interval reaches 0, or block slower beyond noise (the ratio's interval above 1).`,
    `Target 1 (block keeps more, Δ's 95% interval above 0): measured ${kept}/${groups.length} groups, ` +
        `analytic on the same steps ${groups.filter((group) => group.summary.analyticKeepsMore).length}/${groups.length}. ` +
        `Wall-clock (block slower beyond noise): ${slower}/${groups.length} groups. ${generations} generations, ` +
        `${fixed((1000 * elapsedSeconds) / Math.max(1, generations), 1)} ms each on average.`
);
process.stdout.write(lines.join("\n") + "\n");

const output = flags.out ?? join(root, ".specgate/bench-block", `result-${started.toISOString().replace(/[:.]/g, "-")}.json`);
await mkdir(join(output, ".."), {recursive: true});
await writeJsonOutput(output, {
    benchmark: "block vs strict (issue #34, target 1)",
    date: started.toISOString(),
    commit,
    uncommittedChanges: dirty,
    machine: {...machine, loadAverageAtEnd: loadavg()},
    settings: {
        backend: "native",
        threads,
        gamma,
        drafter: "model",
        draftSampling: "sample",
        maxTokens,
        ignoreEos,
        prompts: promptCount,
        seedBase,
        pairs: Object.fromEntries(pairNames.map((name) => [name, modelPairs[name]])),
        temperatures,
        batteries,
        intervals: {
            difference: "paired t, 95% (@stdlib Student-t quantile)",
            relativeGainAndWallRatio: `percentile bootstrap over prompts (pairs kept together), 95%, ${resamples} resamples`
        }
    },
    elapsedSeconds,
    groups
});
process.stderr.write(`wrote ${output}\n`);
