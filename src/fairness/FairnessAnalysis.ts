import type {BootstrapInterval} from "../statistics/stratifiedBootstrap.js";
import type {CostCurve} from "../speedup/speedupModel.js";
import type {EqualizeAnalysis} from "./equalize/EqualizeAnalysis.js";
import type {FairnessItemRecord} from "./FairnessItemRecord.js";
import type {FairnessGrouping} from "./groupBatteryItems.js";

/** One group's (task's or language's) row of the analysis. */
export interface FairnessGroupResult {
    readonly name: string;
    readonly items: number;
    /** Items with a reference continuation (fitness uses only their positions). */
    readonly referenceItems: number;
    readonly measured: {
        /** α_T from the runs: accepted / drafted tokens. */
        readonly acceptanceRate: number;
        /** α̂: the i.i.d. per-position acceptance explaining the accepted tokens per step (inferAcceptance). */
        readonly inferredAlpha: number;
        /** 1 + accepted / drafts: tokens per target call. */
        readonly meanAcceptanceLength: number;
        readonly baselineTokensPerSecond: number;
        readonly speculativeTokensPerSecond: number;
        /** Speculative / target-only tokens per second, with a bootstrap CI over items. */
        readonly speedup: BootstrapInterval;
        /**
         * The cost-curve prediction f_γ(α̂)·t_T(1) / (γ·t_D + t_T(γ+1)): α̂ inverted from the measured
         * acceptance length, priced with the pooled measured cost curve (verification of γ + 1 tokens at
         * its measured cost). Not the Disparate Impacts paper's S_T; null without a cost curve.
         */
        readonly costCurveSpeedup: number | null;
        /**
         * The Disparate Impacts paper's S_T = E_{s~T}[f_γ(α(s)) / (1 + γc)] (eq. 4): per-position analytic α(s) = Σ min(p, q)
         * from teacher forcing, c = t_D / t_T(1) from the measured cost curve (the paper's model prices a
         * verification like one target step). Null without a cost curve.
         */
        readonly seedSpeedup: number | null;
        /** Share of items whose speculative output equals the target-only output. */
        readonly identicalShare: number;
    };
    readonly distributions: {
        readonly positions: number;
        /** Analytic α = E[Σ min(p, q)] at the distribution temperature. */
        readonly alpha: number;
        /** E[argmax p = argmax q]: the analytic α at temperature 0. */
        readonly argmaxAgreement: number;
        /** D_T = E[−Σ p log q], with a bootstrap CI over items. */
        readonly crossEntropy: BootstrapInterval;
        readonly kl: number;
        readonly tv: number;
        /** 1 − r_q, r_q = E[TV(data, q)] on reference tokens; null without references. */
        readonly fitness: number | null;
        /** r_p = E[TV(data, p)]; null without references. */
        readonly targetMisfit: number | null;
        /** |α − (1 − r_q)|, which the Disparate Impacts paper Theorem 2 bounds by r_p; null without references. */
        readonly fitnessGap: number | null;
    };
}

export interface FairnessAnalysis {
    readonly by: FairnessGrouping;
    readonly settings: {
        readonly gamma: number;
        readonly maxTokens: number;
        readonly stop: readonly string[];
        readonly temperature: number;
        /** Temperature of the rows behind α, D_T, KL, TV and fitness (the run's, or 1 at temperature 0). */
        readonly distributionTemperature: number;
        readonly seed: number;
        readonly resamples: number;
        readonly confidence: number;
    };
    readonly groups: readonly FairnessGroupResult[];
    readonly across: {
        /** U = (1/m) Σ (D_T − D_min)² with a bootstrap CI (items resampled within each group). */
        readonly unfairness: BootstrapInterval;
        readonly minimumCrossEntropy: number;
        readonly bestServedGroup: string;
        readonly worstServedGroup: string;
        readonly speedup: {
            readonly fastestGroup: string;
            readonly slowestGroup: string;
            /** Max / min measured speed-up across groups. */
            readonly maxMinRatio: number;
            /** Population variance (1/m) of the measured speed-ups. */
            readonly variance: number;
        };
        /** Population variance of the measured α_T and of the analytic α across groups. */
        readonly acceptanceVariance: number;
        readonly analyticAlphaVariance: number;
        /** Spearman ρ of drafter fitness against measured α: across groups and across items; null when undefined. */
        readonly fitnessAlphaSpearman: {readonly groups: number | null; readonly items: number | null};
        /** Spearman ρ of D_T against measured α across groups (Disparate Impacts paper expects it negative). */
        readonly divergenceAlphaSpearman: number | null;
        /** The pooled cost curve behind every predicted S_T (milliseconds). */
        readonly costCurve: CostCurve | null;
    };
    /** The items measured; those skipped under the context rule are in `context.skipped`, not here. */
    readonly items: readonly FairnessItemRecord[];
    /**
     * The context rule (fitsContext): the context size of the pair, and the items not measured because
     * their prompt does not fit it with maxTokens generated tokens. No prompt is cut.
     */
    readonly context: {
        readonly size: number;
        readonly skipped: readonly {readonly id: string; readonly group: string; readonly promptTokens: number}[];
    };
    /** Per-group γ serving hints and what they measured (`--equalize`); absent without it. */
    readonly equalize?: EqualizeAnalysis;
}
