import type {ModelBackend} from "../backend/ModelBackend.js";
import {medianInterval, type MedianInterval} from "../statistics/medianInterval.js";
import {type GammaSetting, gammaLabel, parseGammaSpec} from "../engine/gammaSpec.js";
import {SpeculationLoad} from "../engine/SpeculationLoad.js";
import type {SamplingOptions} from "../distributions/SamplingOptions.js";
import {createDrafter} from "../engine/drafters/createDrafter.js";
import {pairDraftModel} from "../engine/drafters/pairDraftModel.js";
import {type DrafterSpec, drafterLabel, drafterRetokenizes, drafterUsesModel} from "../engine/drafters/parseDrafterSpec.js";
import {generate} from "../engine/generate.js";
import {GenerationTelemetry} from "../engine/GenerationTelemetry.js";
import {policyLabel} from "../policies/parsePolicySpec.js";
import {resolveCorrectionMemory} from "../correctionMemory/resolveCorrectionMemory.js";
import type {PolicyConfig} from "../policies/policyConfigSchema.js";
import {inferAcceptance} from "../speedup/inferAcceptance.js";
import {speedupFromCostCurve} from "../speedup/speedupModel.js";

export interface BenchOptions {
    target: ModelBackend;
    /** The draft model; needed only by drafters that name `model`. */
    draft?: ModelBackend;
    /** Drafters compared side by side (each × policy × γ). Default: the draft model alone. */
    drafters?: readonly DrafterSpec[];
    prompts: readonly string[];
    policies: readonly PolicyConfig[];
    gammas: readonly number[];
    /** Largest drafts of `draftLength: "auto"` rows (γ=auto:MAX), measured beside the fixed γ rows. */
    autoGammas?: readonly number[];
    sampling: SamplingOptions;
    maxTokens: number;
    seed: number;
    /**
     * Rounds: each runs target-only, every configuration and the extra paths once over the prompts,
     * so a slow spell of the machine lands on all of them; speed-ups are per round, then summarised.
     */
    repeats?: number;
    /** An extra path run on the same prompts, e.g. node-llama-cpp's own predictor. */
    extraPaths?: ReadonlyArray<{
        label: string;
        run: (prompt: string, seed: number) => Promise<{tokens: number[]; decodeMilliseconds: number}>;
    }>;
    onProgress?: (done: number, total: number, label: string) => void;
}

export interface BenchRow {
    label: string;
    /** Drafter label (e.g. `ngram:3:16+model`); null for target-only and the extra paths. */
    drafter: string | null;
    policy: string | null;
    /** The fixed γ, or the largest draft of an auto row. */
    gamma: number;
    /** Present on rows whose draft length was chosen each step (`--gamma auto:MAX`). */
    draftLength?: "auto";
    tokens: number;
    tokensPerSecond: number;
    /** Median over rounds of tokens/s ÷ target-only's tokens/s in the same round. */
    speedup: number;
    /** The lowest and highest per-round speed-up (equal to `speedup` with one round). */
    speedupRange: {min: number; max: number};
    /**
     * Distribution-free interval of the median per-round speed-up (medianInterval): 95% from 6
     * rounds on; with fewer, the range of the rounds and the lower confidence it has.
     */
    speedupInterval: MedianInterval;
    acceptanceRate: number | null;
    meanAcceptanceLength: number | null;
    /** α̂: the i.i.d. per-position acceptance that explains the measured accepted tokens per step. */
    inferredAlpha: number | null;
    /**
     * The speed-up this acceptance allows if speculation cost only its model evaluations:
     * f_γ(α̂)·T / (D + t_T(γ+1)), with T target-only's whole decode time per token, D the draft
     * model's time per drafting step (catch-up batches included) and t_T(γ+1) the verification call,
     * all measured in this run.
     */
    analyticSpeedup: number | null;
    /** Measured ÷ analytic speed-up (median, and over rounds): the share of the limit specgate reaches. */
    efficiency: number | null;
    efficiencyRange: {min: number; max: number} | null;
    /** Share of decode time outside model evaluations (JS-side overhead). */
    overheadShare: number | null;
    /** Share of prompts whose output tokens equal the target-only output. */
    exactMatchRate: number;
    telemetry: ReturnType<GenerationTelemetry["toJSON"]> | null;
}

/**
 * Target-only, then every drafter × γ × policy, then the extra paths, on the same prompts, seeds and
 * process: tokens/s, speed-up, acceptance, the analytic limit from this run's cost curve and the
 * efficiency measured / analytic. Decode time excludes prompt evaluation in every path.
 */
export async function runBench(options: BenchOptions): Promise<BenchRow[]> {
    const drafters = options.drafters ?? [{kind: "model"} as const];
    await checkBenchInputs(options, drafters);
    const repeats = options.repeats ?? 1;
    const settings: GammaSetting[] = [
        ...options.gammas.map((gamma) => ({gamma})),
        ...(options.autoGammas ?? []).map((maxGamma) => parseGammaSpec(`auto:${maxGamma}`, "autoGammas"))
    ];
    const configurations = drafters.flatMap((drafter) =>
        settings.flatMap((gamma) => options.policies.map((policy) => ({drafter, gamma, policy})))
    );
    const total = (1 + configurations.length + (options.extraPaths?.length ?? 0)) * options.prompts.length * repeats;
    let done = 0;
    const progress = (label: string) => options.onProgress?.(++done, total, label);

    const baseline = await enginePath(options, undefined, {kind: "strict"}, {gamma: 0}, "target-only", progress);
    const speculative = [];
    for (const {drafter, gamma, policy} of configurations)
        speculative.push({
            drafter,
            gamma,
            policy,
            path: await enginePath(options, drafter, policy, gamma, configurationLabel(drafter, policy, gamma), progress)
        });
    const extras = (options.extraPaths ?? []).map((path) => extraPath(options, path, progress));
    // Round-robin: a slow spell of the machine lands on every path alike.
    for (let round = 0; round < repeats; round++)
        for (const path of [baseline, ...speculative.map((entry) => entry.path), ...extras]) await path.round();

    const reference = new BaselineReference(baseline);
    return [
        baselineRow(baseline),
        ...speculative.map(({drafter, gamma, policy, path}) => speculativeRow(drafter, gamma, policy, path, reference)),
        ...extras.map((path) => extraRow(path, reference))
    ];
}

/**
 * Everything a configuration will need, checked before the first one runs: a draft of another
 * vocabulary drafts only in text (model:retokenize), while drafting in tokens and the extra paths
 * (node-llama-cpp's predictor) need llama.cpp's pairing; every policy's correction memory loads.
 */
async function checkBenchInputs(options: BenchOptions, drafters: readonly DrafterSpec[]): Promise<void> {
    const pairsInTokens =
        (options.extraPaths?.length ?? 0) > 0 || drafters.some((drafter) => drafterUsesModel(drafter) && !drafterRetokenizes(drafter));
    if (options.draft != null && pairsInTokens) pairDraftModel(options.target, options.draft, undefined, "draft");
    for (const policy of options.policies)
        await resolveCorrectionMemory(policy, {size: options.target.vocabularySize, identity: options.target.vocabularyIdentity()});
}

/** Draft-model rows keep their historical labels; other drafters are named first. */
function configurationLabel(drafter: DrafterSpec, policy: PolicyConfig, gamma: GammaSetting): string {
    return `${drafter.kind === "model" && drafter.retokenize !== true ? "" : `${drafterLabel(drafter)} `}${policyLabel(policy)} ${gammaLabel(gamma)}`;
}

type EnginePath = Awaited<ReturnType<typeof enginePath>>;
type ExtraPath = ReturnType<typeof extraPath>;

/** One path through the engine: its telemetry over every round, its outputs (first round) and tokens/s per round. */
async function enginePath(
    options: BenchOptions,
    drafter: DrafterSpec | undefined,
    policy: PolicyConfig,
    gamma: GammaSetting,
    label: string,
    progress: (label: string) => void
) {
    const telemetry = new GenerationTelemetry();
    const outputs: number[][] = [];
    const rates: number[] = [];
    // Costs and acceptance learnt by an auto row carry over its prompts and rounds, as a server's do over requests.
    const speculationLoad = gamma.draftLength === "auto" ? new SpeculationLoad() : undefined;
    // One memory per configuration, shared across its prompts and rounds (the online phase of
    // Calibrated SD), starting from the policy's memory file when it names one.
    const correctionMemory = await resolveCorrectionMemory(policy, {
        size: options.target.vocabularySize,
        identity: options.target.vocabularyIdentity()
    });
    const round = async (): Promise<void> => {
        const pass = new GenerationTelemetry();
        // One drafter per pass over the prompts: a suffix cache learns from the earlier prompts of
        // the pass (requests of one run), and every round starts as the first did.
        const instance = drafter == null ? undefined : createDrafter(drafter, options.draft, "drafters");
        for (const [index, prompt] of options.prompts.entries()) {
            const generation = {policy, ...gamma, sampling: options.sampling, maxTokens: options.maxTokens, seed: options.seed + index};
            const result = await generate(options.target, undefined, prompt, generation, {
                correctionMemory,
                drafter: instance,
                speculationLoad
            });
            pass.merge(result.telemetry);
            if (rates.length === 0) outputs.push(result.tokens);
            progress(label);
        }
        telemetry.merge(pass);
        rates.push(pass.tokensPerSecond);
    };
    return {label, telemetry, outputs, rates, round};
}

/** An extra path (e.g. node-llama-cpp's predictor) run on the same prompts and seeds. */
function extraPath(options: BenchOptions, path: NonNullable<BenchOptions["extraPaths"]>[number], progress: (label: string) => void) {
    const totals = {tokens: 0, milliseconds: 0};
    const outputs: number[][] = [];
    const rates: number[] = [];
    const round = async (): Promise<void> => {
        let tokens = 0;
        let milliseconds = 0;
        for (const [index, prompt] of options.prompts.entries()) {
            const result = await path.run(prompt, options.seed + index);
            tokens += result.tokens.length;
            milliseconds += result.decodeMilliseconds;
            if (rates.length === 0) outputs.push(result.tokens);
            progress(path.label);
        }
        totals.tokens += tokens;
        totals.milliseconds += milliseconds;
        rates.push(milliseconds === 0 ? 0 : (tokens * 1000) / milliseconds);
    };
    return {label: path.label, totals, outputs, rates, round};
}

/** What every row is compared with: target-only's outputs, per-round rates and time per token. */
class BaselineReference {
    /** Target-only's whole decode time per emitted token; null when it emitted none. */
    public readonly timePerToken: number | null;

    public constructor(private readonly baseline: EnginePath) {
        const decode = baseline.telemetry.time.total - baseline.telemetry.time.prompt;
        this.timePerToken = baseline.telemetry.emittedTokens === 0 ? null : decode / baseline.telemetry.emittedTokens;
    }

    /** Share of prompts whose output tokens equal target-only's. */
    public matchRate(outputs: readonly number[][]): number {
        const expected = this.baseline.outputs;
        const same = (tokens: readonly number[], index: number) =>
            tokens.length === expected[index].length && tokens.every((token, position) => token === expected[index][position]);
        return outputs.filter(same).length / outputs.length;
    }

    /** Per-round speed-ups against target-only in the same round. */
    public speedups(rates: readonly number[]): {median: number; min: number; max: number; interval: MedianInterval} {
        const ratios = rates.map((rate, round) => rate / this.baseline.rates[round]);
        return {...summarize(ratios), interval: medianInterval(ratios)};
    }
}

function baselineRow({telemetry}: EnginePath): BenchRow {
    return {
        label: "target-only",
        drafter: null,
        policy: null,
        gamma: 0,
        tokens: telemetry.emittedTokens,
        tokensPerSecond: telemetry.tokensPerSecond,
        speedup: 1,
        speedupRange: {min: 1, max: 1},
        speedupInterval: {low: 1, high: 1, confidence: 1},
        acceptanceRate: null,
        meanAcceptanceLength: null,
        inferredAlpha: null,
        analyticSpeedup: 1,
        efficiency: 1,
        efficiencyRange: {min: 1, max: 1},
        overheadShare: telemetry.overheadShare,
        exactMatchRate: 1,
        telemetry: telemetry.toJSON()
    };
}

function speculativeRow(
    drafter: DrafterSpec,
    setting: GammaSetting,
    policy: PolicyConfig,
    path: EnginePath,
    reference: BaselineReference
): BenchRow {
    const {telemetry, outputs, rates, label} = path;
    const gamma = setting.maxGamma ?? setting.gamma;
    // The analytic limit assumes one γ on every step: none for a row whose length varies.
    const {alpha, analytic} =
        setting.draftLength === "auto" ? {alpha: null, analytic: null} : analyticLimit(drafter, gamma, telemetry, reference.timePerToken);
    const speedup = reference.speedups(rates);
    return {
        label,
        drafter: drafterLabel(drafter),
        policy: policyLabel(policy),
        gamma,
        ...(setting.draftLength === "auto" ? {draftLength: "auto" as const} : {}),
        tokens: telemetry.emittedTokens,
        tokensPerSecond: telemetry.tokensPerSecond,
        speedup: speedup.median,
        speedupRange: {min: speedup.min, max: speedup.max},
        speedupInterval: speedup.interval,
        acceptanceRate: telemetry.acceptanceRate,
        meanAcceptanceLength: telemetry.meanAcceptanceLength,
        inferredAlpha: alpha,
        analyticSpeedup: analytic,
        efficiency: analytic == null ? null : speedup.median / analytic,
        efficiencyRange: analytic == null ? null : {min: speedup.min / analytic, max: speedup.max / analytic},
        overheadShare: telemetry.overheadShare,
        exactMatchRate: reference.matchRate(outputs),
        telemetry: telemetry.toJSON()
    };
}

/**
 * α̂ and the speed-up this acceptance allows if speculation cost only its model calls. The analytic
 * model assumes a draft model proposing γ tokens per step; lookup drafters and chains propose a
 * varying number, so α̂ is inferred for the `model` drafter only and their limit is the same idea
 * measured directly: target-only's time per token × the tokens emitted ÷ the model time this row spent.
 */
function analyticLimit(
    drafter: DrafterSpec,
    gamma: number,
    telemetry: GenerationTelemetry,
    baselineTimePerToken: number | null
): {alpha: number | null; analytic: number | null} {
    if (drafter.kind !== "model") {
        const analytic =
            baselineTimePerToken != null && telemetry.modelMilliseconds > 0
                ? (baselineTimePerToken * telemetry.emittedTokens) / telemetry.modelMilliseconds
                : null;
        return {alpha: null, analytic};
    }
    const meanAccepted = telemetry.drafts === 0 ? 0 : telemetry.acceptedTokens / telemetry.drafts;
    const alpha = telemetry.drafts === 0 ? null : inferAcceptance(Math.min(gamma, meanAccepted), gamma);
    const verifyTime = telemetry.costCurve()[gamma + 1];
    // Every draft evaluation of a drafting step counts, the 2-token catch-up batches after a fully
    // accepted step included: those are most draft calls at high acceptance, and timing only the
    // single-token ones (a prompt's first draft, the draft after a rejection) overstated the cost.
    const draftTimePerStep = telemetry.drafts === 0 ? null : telemetry.draftModelMilliseconds / telemetry.drafts;
    if (alpha == null || verifyTime == null || draftTimePerStep == null || baselineTimePerToken == null) return {alpha, analytic: null};
    const analytic = speedupFromCostCurve(alpha, gamma, {
        targetTimeOne: baselineTimePerToken,
        targetTimeVerify: verifyTime,
        draftTime: draftTimePerStep / gamma
    });
    return {alpha, analytic};
}

function extraRow(path: ExtraPath, reference: BaselineReference): BenchRow {
    const tokensPerSecond = path.totals.milliseconds === 0 ? 0 : (path.totals.tokens * 1000) / path.totals.milliseconds;
    const speedup = reference.speedups(path.rates);
    return {
        label: path.label,
        drafter: null,
        policy: null,
        gamma: 0,
        tokens: path.totals.tokens,
        tokensPerSecond,
        speedup: speedup.median,
        speedupRange: {min: speedup.min, max: speedup.max},
        speedupInterval: speedup.interval,
        acceptanceRate: null,
        meanAcceptanceLength: null,
        inferredAlpha: null,
        analyticSpeedup: null,
        efficiency: null,
        efficiencyRange: null,
        overheadShare: null,
        exactMatchRate: reference.matchRate(path.outputs),
        telemetry: null
    };
}

/** Median, lowest and highest of a non-empty list. */
function summarize(values: readonly number[]): {median: number; min: number; max: number} {
    const sorted = [...values].sort((a, b) => a - b);
    const middle = Math.floor(sorted.length / 2);
    const median = sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
    return {median, min: sorted[0], max: sorted[sorted.length - 1]};
}

/** What a bench run compares, for the header `specgate bench` prints above its table. */
export interface BenchSetup {
    readonly target: string;
    readonly draft: string | null;
    readonly prompts: number;
    /** Prompts skipped because they do not fit the context with maxTokens (the context rule); default 0. */
    readonly skippedPrompts?: number;
    readonly promptSource: string;
    readonly maxTokens: number;
    readonly temperature: number;
    readonly rounds: number;
    readonly threads: number;
}

/** The lines above the table: the pair, the prompts, the token budget, the rounds and the threads. */
export function formatBenchHeader(setup: BenchSetup): string {
    return (
        [
            `specgate bench: target ${setup.target}${setup.draft == null ? "" : `, draft ${setup.draft}`}`,
            `${setup.prompts} prompts (${setup.promptSource}${(setup.skippedPrompts ?? 0) > 0 ? `; ${setup.skippedPrompts} more skipped: too long for the context` : ""}) × up to ${setup.maxTokens} tokens, temperature ${setup.temperature}, ` +
                `${setup.rounds} round${setup.rounds === 1 ? "" : "s"} (each runs every row once, in turn), ${setup.threads} thread${setup.threads === 1 ? "" : "s"} per model`,
            ""
        ].join("\n") + "\n"
    );
}

/** Rounds from which [lowest, highest] is a 95% interval for the median speed-up (1 − 2^(1−n) ≥ 0.95). */
export const ROUNDS_FOR_95_PERCENT = 6;

/**
 * The line that ends the table: what the rows let one conclude, from each speed-up's interval for
 * the median (speedupInterval). The fastest configuration whose output equals target-only's on every
 * prompt is called faster (or slower) only when its interval lies above (below) 1× with 95%
 * confidence; rounds too few for that are said to be too few, with the sign test's p-value of the
 * rounds all on one side. A faster lossy row is named with its price.
 */
export function benchConclusion(rows: readonly BenchRow[], rounds?: number): string {
    const times = (value: number) => `${value.toFixed(2)}×`;
    const interval = (row: BenchRow) =>
        `[${row.speedupInterval.low.toFixed(2)}, ${row.speedupInterval.high.toFixed(2)}] (${percent(row.speedupInterval.confidence)} interval of the median)`;
    const candidates = rows.filter((row) => row.label !== "target-only");
    if (candidates.length === 0) return "conclusion: only target-only ran; nothing to compare";
    const byspeed = [...candidates].sort((x, y) => y.speedup - x.speedup);
    const exact = byspeed.find((row) => row.exactMatchRate === 1);
    const fastest = byspeed[0];
    let text: string;
    if (exact === undefined) text = "no configuration kept target-only's output on every prompt";
    else if (exact.speedupInterval.low > 1 || exact.speedupInterval.high < 1) {
        const faster = exact.speedupInterval.low > 1;
        const side = faster ? "faster" : "slower";
        text = `${exact.label} is the fastest exact configuration, ${times(exact.speedup)} ${interval(exact)}: `;
        text +=
            exact.speedupInterval.confidence >= 0.95
                ? `${side} than target-only`
                : rounds === 1
                  ? `one round has no interval, so it cannot be called ${side} (run --repeats ${ROUNDS_FOR_95_PERCENT} or more)`
                  : `${side} in all ${rounds ?? "its"} rounds, but that is a sign test at p = ${signTestP(rounds)}: too few rounds to call it ${side} (run --repeats ${ROUNDS_FOR_95_PERCENT} or more)`;
        if (!faster)
            text +=
                "; here the models' per-call cost outweighs what acceptance saves; the analytic limit is what carries over to a compute-bound target";
    } else
        text = `${exact.label} is the fastest exact configuration at ${times(exact.speedup)}, but its interval ${interval(exact)} contains 1×: no reliable gain`;
    if (exact !== undefined && fastest !== exact && fastest.exactMatchRate < 1)
        text += `; ${fastest.label} is faster (${times(fastest.speedup)}) but changed the output on ${(100 * (1 - fastest.exactMatchRate)).toFixed(0)}% of prompts`;
    return `conclusion: ${text}`;
}

function percent(value: number): string {
    return `${(100 * value).toFixed(value >= 0.995 || value === 0 ? 0 : 1)}%`;
}

/** Two-sided sign-test p-value of n rounds all on one side of 1×: 2 · 0.5^n. */
function signTestP(rounds: number | undefined): string {
    return rounds === undefined ? "unknown" : Math.min(1, 2 * 0.5 ** rounds).toPrecision(3);
}

/** The Markdown table `specgate bench` prints, with a legend below it and the conclusion last. */
export function formatBenchTable(rows: readonly BenchRow[], rounds?: number): string {
    const number = (value: number | null, digits: number) => (value == null ? "–" : value.toFixed(digits));
    const spread = (value: number, range: {min: number; max: number} | null, digits: number, unit = "") =>
        range == null || range.max - range.min < 10 ** -digits
            ? `${value.toFixed(digits)}${unit}`
            : `${value.toFixed(digits)}${unit} [${range.min.toFixed(digits)}–${range.max.toFixed(digits)}]`;
    const differs = rows.some((row) => row.exactMatchRate < 1);
    const lines = [
        "| configuration | tok/s | speed-up [interval] | acceptance | mean acc. length | α̂ | analytic limit | efficiency [range] | outside llama_decode | exact match |",
        "|---|---|---|---|---|---|---|---|---|---|",
        ...rows.map(
            (row) =>
                `| ${row.exactMatchRate < 1 ? "⚠ " : ""}${row.label} | ${row.tokensPerSecond.toFixed(1)} | ${spread(row.speedup, {min: row.speedupInterval.low, max: row.speedupInterval.high}, 2, "×")} | ${row.acceptanceRate == null ? "–" : `${(100 * row.acceptanceRate).toFixed(1)}%`} | ${number(row.meanAcceptanceLength, 2)} | ${number(row.inferredAlpha, 3)} | ${row.analyticSpeedup == null ? "–" : `${row.analyticSpeedup.toFixed(2)}×`} | ${row.efficiency == null ? "–" : spread(row.efficiency, row.efficiencyRange, 2)} | ${row.overheadShare == null ? "–" : `${(100 * row.overheadShare).toFixed(1)}%`} | ${(100 * row.exactMatchRate).toFixed(0)}% |`
        ),
        "",
        "speed-up: tokens/s ÷ target-only's in the same round; the median over rounds and its distribution-free interval " +
            `(order statistics: 95% from ${ROUNDS_FOR_95_PERCENT} rounds on; below that the [lowest–highest] round, a ${percent(1 - 2 * 0.5 ** Math.max(1, rounds ?? 1))} interval here).`,
        "acceptance: accepted ÷ drafted tokens; mean acc. length: tokens per target call; α̂: the per-token acceptance that explains it.",
        "analytic limit: the speed-up α̂ allows if speculation cost only its model calls (this run's draft and verification times",
        "against target-only's whole time per token; for lookup drafters and chains, target-only's time per token × tokens ÷ the row's model time);",
        "efficiency: speed-up ÷ limit. outside llama_decode: share of decode time not in the models.",
        `exact match: prompts whose output equals target-only's.${differs ? " ⚠ marks rows whose output differs on some prompt: a lossy policy changed the text." : ""}`,
        "",
        benchConclusion(rows, rounds)
    ];
    return lines.join("\n") + "\n";
}
