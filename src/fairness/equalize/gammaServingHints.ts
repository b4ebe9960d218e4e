import {InvalidInputError} from "../../errors.js";
import type {FairnessAnalysis} from "../FairnessAnalysis.js";
import type {FairnessGrouping} from "../groupBatteryItems.js";
import type {EqualizedGroup} from "./EqualizeAnalysis.js";

/** The file `--equalize OUT.json` writes: what a server needs to pick γ per request group. */
export interface GammaServingHints {
    readonly format: "specgate-gamma-hints/1";
    /** What the keys of `gamma` are: languages (tags as in the battery) or task names. */
    readonly by: FairnessGrouping;
    /** The verification the hints hold for; strict is what keeps every γ lossless. */
    readonly policy: "strict";
    /** The sampling temperature α̂ was measured at. */
    readonly temperature: number;
    /** Group → γ to serve: the predicted best γ unless the re-run measured it clearly slower, then `defaultGamma` (see servedGamma). */
    readonly gamma: Readonly<Record<string, number>>;
    /** Group → the γ the cost-curve model predicted best, confirmed or not. */
    readonly predictedGamma: Readonly<Record<string, number>>;
    /** The analysis γ: what every group was served before, and what a group not listed gets. */
    readonly defaultGamma: number;
    /** Groups whose measured speed-up at the served γ has its whole interval below 1: a server may serve them without a draft. */
    readonly slowerThanTargetOnly: readonly string[];
    readonly target: string;
    readonly draft: string;
}

/**
 * The γ to serve a group: its predicted best, unless the re-run measured it clearly slower than the
 * global γ (its whole interval below the speed-up at the global γ). The prediction leaves out
 * per-step overheads, so a hint the measurement contradicts would make the group slower than
 * changing nothing; a difference inside the noise does not overrule the model.
 */
export function servedGamma(group: EqualizedGroup, globalGamma: number): number {
    return group.measured.atOwnGamma.high < group.measured.atGlobalGamma.estimate ? globalGamma : group.gamma;
}

export function gammaServingHints(
    analysis: Pick<FairnessAnalysis, "by" | "settings" | "equalize">,
    models: {readonly target: string; readonly draft: string}
): GammaServingHints {
    const equalize = analysis.equalize;
    if (equalize == null) throw new InvalidInputError("has no equalize section; run the analysis with --equalize", "analysis");
    const served = (group: EqualizedGroup) => servedGamma(group, equalize.globalGamma);
    const measuredAtServed = (group: EqualizedGroup) =>
        served(group) === group.gamma ? group.measured.atOwnGamma : group.measured.atGlobalGamma;
    return {
        format: "specgate-gamma-hints/1",
        by: analysis.by,
        policy: "strict",
        temperature: analysis.settings.temperature,
        gamma: Object.fromEntries(equalize.groups.map((group) => [group.name, served(group)])),
        predictedGamma: Object.fromEntries(equalize.groups.map((group) => [group.name, group.gamma])),
        defaultGamma: equalize.globalGamma,
        slowerThanTargetOnly: equalize.groups.filter((group) => measuredAtServed(group).high < 1).map((group) => group.name),
        target: models.target,
        draft: models.draft
    };
}
