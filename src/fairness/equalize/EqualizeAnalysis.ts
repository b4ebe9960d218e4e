import type {BootstrapInterval} from "../../statistics/stratifiedBootstrap.js";
import type {VerificationCosts} from "./predictGammaSpeedups.js";
import type {GammaChoiceKind, SpeedupSpread} from "./speedupSpread.js";

/** One group under `--equalize`: its best γ, and speed-ups predicted and measured at the global γ and at its own. */
export interface EqualizedGroup {
    readonly name: string;
    /** α̂ of the analysis runs (at the global γ), the α every prediction uses. */
    readonly inferredAlpha: number;
    /** The γ in 1..maxGamma with the largest predicted speed-up: the serving hint. */
    readonly gamma: number;
    /** Predicted speed-up at γ = 1..maxGamma (index γ − 1), from α̂ and the measured cost curve. */
    readonly predictedByGamma: readonly number[];
    readonly predicted: {readonly atGlobalGamma: number; readonly atOwnGamma: number};
    readonly measured: {
        /** Re-run of the group's items at the global γ, in the same pass as `atOwnGamma`, with a bootstrap CI over items. */
        readonly atGlobalGamma: BootstrapInterval;
        /** Re-run of the group's items at its own γ, with a bootstrap CI over items. */
        readonly atOwnGamma: BootstrapInterval;
        /** α̂ of the re-run: close to `inferredAlpha` when α does not depend on γ, as the prediction assumes. */
        readonly inferredAlphaAtOwnGamma: number;
        readonly acceptanceRateAtOwnGamma: number;
        /** 1 + accepted / drafts of the re-run: tokens per target call at the group's own γ. */
        readonly meanAcceptanceLengthAtOwnGamma: number;
        /** Share of re-run items whose speculative output equals target-only (1 at temperature 0: quality unchanged). */
        readonly identicalShareAtOwnGamma: number;
    };
}

/** The `equalize` section of a fairness analysis. */
export interface EqualizeAnalysis {
    /** The analysis γ, served to every group before equalizing. */
    readonly globalGamma: number;
    /** γ candidates are 1..maxGamma (`--equalize-max-gamma`, raised to the global γ if that is larger). */
    readonly maxGamma: number;
    /** t_T(k), k = 1..maxGamma+1, and t_D in milliseconds: mean in-run times from strict generation at every γ, measured once. */
    readonly costs: VerificationCosts;
    readonly choice: GammaChoiceKind;
    readonly groups: readonly EqualizedGroup[];
    /** Max/min ratio and variance across groups at the global γ (before) and at each group's own γ (after); measured ones from the re-runs. */
    readonly spread: {
        readonly predicted: {readonly before: SpeedupSpread; readonly after: SpeedupSpread};
        readonly measured: {readonly before: SpeedupSpread; readonly after: SpeedupSpread};
    };
}
