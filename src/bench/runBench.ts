import {assertSameVocabulary} from "../backend/assertSameVocabulary.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import type {SamplingOptions} from "../distributions/SamplingOptions.js";
import {createDrafter} from "../engine/drafters/createDrafter.js";
import {type DrafterSpec, drafterLabel} from "../engine/drafters/parseDrafterSpec.js";
import {generate} from "../engine/generate.js";
import {GenerationTelemetry} from "../engine/GenerationTelemetry.js";
import {policyLabel} from "../policies/parsePolicySpec.js";
import {resolveCorrectionMemory} from "../policies/resolveCorrectionMemory.js";
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
    sampling: SamplingOptions;
    maxTokens: number;
    seed: number;
    /** Repetitions of the whole prompt set per configuration (timings are summed). */
    repeats?: number;
    /** An extra path run on the same prompts, e.g. node-llama-cpp's own predictor. */
    extraPaths?: ReadonlyArray<{label: string; run: (prompt: string, seed: number) => Promise<{tokens: number[]; decodeMilliseconds: number}>}>;
    onProgress?: (done: number, total: number, label: string) => void;
}

export interface BenchRow {
    label: string;
    /** Drafter label (e.g. `ngram:2:4+model`); null for target-only and the extra paths. */
    drafter: string | null;
    policy: string | null;
    gamma: number;
    tokens: number;
    tokensPerSecond: number;
    speedup: number;
    acceptanceRate: number | null;
    meanAcceptanceLength: number | null;
    /** α̂: the i.i.d. per-position acceptance that explains the measured accepted tokens per step. */
    inferredAlpha: number | null;
    /** f_γ(α̂)·t_T(1) / (γ·t_D + t_T(γ+1)), all times measured in this run. */
    analyticSpeedup: number | null;
    efficiency: number | null;
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
    // Everything a configuration will need is checked before the first one runs.
    if (options.draft != null) assertSameVocabulary(options.target, options.draft, "--draft");
    for (const policy of options.policies)
        await resolveCorrectionMemory(policy, {size: options.target.vocabularySize, identity: options.target.vocabularyIdentity()});
    const repeats = options.repeats ?? 1;
    const drafters = options.drafters ?? [{kind: "model"} as const];
    const configurations = drafters.flatMap((drafter) => options.gammas.flatMap((gamma) => options.policies.map((policy) => ({drafter, gamma, policy}))));
    const total = (1 + configurations.length + (options.extraPaths?.length ?? 0)) * options.prompts.length * repeats;
    let done = 0;
    const progress = (label: string) => options.onProgress?.(++done, total, label);

    const runPath = async (drafter: DrafterSpec | undefined, policy: PolicyConfig, gamma: number, label: string) => {
        const telemetry = new GenerationTelemetry();
        const outputs: number[][] = [];
        // One memory per configuration, shared across its prompts (the online phase of seed 004),
        // starting from the policy's memory file when it names one.
        const correctionMemory = await resolveCorrectionMemory(policy, {size: options.target.vocabularySize, identity: options.target.vocabularyIdentity()});
        for (let repeat = 0; repeat < repeats; repeat++) {
            // One drafter per pass over the prompts: a suffix cache learns from the earlier prompts of
            // the pass (requests of one run), and every repeat starts as the first did.
            const instance = drafter == null ? undefined : createDrafter(drafter, options.draft, "--drafters");
            for (const [index, prompt] of options.prompts.entries()) {
                const result = await generate(options.target, undefined, prompt, {
                    policy, gamma, sampling: options.sampling, maxTokens: options.maxTokens, seed: options.seed + index
                }, {correctionMemory, drafter: instance});
                telemetry.merge(result.telemetry);
                if (repeat === 0) outputs.push(result.tokens);
                progress(label);
            }
        }
        return {telemetry, outputs};
    };

    const baseline = await runPath(undefined, {kind: "strict"}, 0, "target-only");
    const baselineRate = baseline.telemetry.tokensPerSecond;
    const targetTimeOne = baseline.telemetry.costCurve()[1];
    const matchRate = (outputs: number[][]) =>
        outputs.filter((tokens, index) => tokens.length === baseline.outputs[index].length && tokens.every((token, position) => token === baseline.outputs[index][position])).length / outputs.length;

    const rows: BenchRow[] = [{
        label: "target-only", drafter: null, policy: null, gamma: 0, tokens: baseline.telemetry.emittedTokens,
        tokensPerSecond: baselineRate, speedup: 1, acceptanceRate: null, meanAcceptanceLength: null,
        inferredAlpha: null, analyticSpeedup: 1, efficiency: 1, overheadShare: baseline.telemetry.overheadShare, exactMatchRate: 1, telemetry: baseline.telemetry.toJSON()
    }];

    for (const {drafter, gamma, policy} of configurations) {
        // Draft-model rows keep their historical labels; other drafters are named first.
        const label = `${drafter.kind === "model" ? "" : `${drafterLabel(drafter)} `}${policyLabel(policy)} γ=${gamma}`;
        const {telemetry, outputs} = await runPath(drafter, policy, gamma, label);
        const json = telemetry.toJSON();
        const curve = telemetry.costCurve();
        const meanAccepted = telemetry.drafts === 0 ? 0 : telemetry.acceptedTokens / telemetry.drafts;
        // The analytic model assumes a draft model proposing γ tokens per step; lookup drafters propose
        // a varying number at no model cost, so it is computed for the `model` drafter only.
        const alpha = telemetry.drafts === 0 || drafter.kind !== "model" ? null : inferAcceptance(Math.min(gamma, meanAccepted), gamma);
        const verifyTime = curve[gamma + 1];
        const draftTime = json.draftTokenMilliseconds;
        const analytic = alpha != null && verifyTime != null && draftTime != null && targetTimeOne != null
            ? speedupFromCostCurve(alpha, gamma, {targetTimeOne, targetTimeVerify: verifyTime, draftTime})
            : null;
        const speedup = telemetry.tokensPerSecond / baselineRate;
        rows.push({
            label, drafter: drafterLabel(drafter), policy: policyLabel(policy), gamma, tokens: telemetry.emittedTokens,
            tokensPerSecond: telemetry.tokensPerSecond, speedup,
            acceptanceRate: telemetry.acceptanceRate, meanAcceptanceLength: telemetry.meanAcceptanceLength,
            inferredAlpha: alpha, analyticSpeedup: analytic, efficiency: analytic == null ? null : speedup / analytic, overheadShare: telemetry.overheadShare,
            exactMatchRate: matchRate(outputs), telemetry: json
        });
    }

    for (const path of options.extraPaths ?? []) {
        let tokens = 0;
        let milliseconds = 0;
        const outputs: number[][] = [];
        for (let repeat = 0; repeat < repeats; repeat++)
            for (const [index, prompt] of options.prompts.entries()) {
                const result = await path.run(prompt, options.seed + index);
                tokens += result.tokens.length;
                milliseconds += result.decodeMilliseconds;
                if (repeat === 0) outputs.push(result.tokens);
                progress(path.label);
            }
        const tokensPerSecond = milliseconds === 0 ? 0 : (tokens * 1000) / milliseconds;
        rows.push({
            label: path.label, drafter: null, policy: null, gamma: 0, tokens, tokensPerSecond, speedup: tokensPerSecond / baselineRate,
            acceptanceRate: null, meanAcceptanceLength: null, inferredAlpha: null, analyticSpeedup: null, efficiency: null, overheadShare: null,
            exactMatchRate: matchRate(outputs), telemetry: null
        });
    }
    return rows;
}

/** The Markdown table `specgate bench` prints. */
export function formatBenchTable(rows: readonly BenchRow[]): string {
    const number = (value: number | null, digits: number) => (value == null ? "–" : value.toFixed(digits));
    const lines = [
        "| configuration | tok/s | speed-up | acceptance | mean acc. length | α̂ | analytic limit | efficiency | outside llama_decode | exact match |",
        "|---|---|---|---|---|---|---|---|---|---|",
        ...rows.map((row) => `| ${row.label} | ${row.tokensPerSecond.toFixed(1)} | ${row.speedup.toFixed(2)}× | ${row.acceptanceRate == null ? "–" : `${(100 * row.acceptanceRate).toFixed(1)}%`} | ${number(row.meanAcceptanceLength, 2)} | ${number(row.inferredAlpha, 3)} | ${row.analyticSpeedup == null ? "–" : `${row.analyticSpeedup.toFixed(2)}×`} | ${number(row.efficiency, 2)} | ${row.overheadShare == null ? "–" : `${(100 * row.overheadShare).toFixed(1)}%`} | ${(100 * row.exactMatchRate).toFixed(0)}% |`)
    ];
    return lines.join("\n") + "\n";
}
