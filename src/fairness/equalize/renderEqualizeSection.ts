import type {BootstrapInterval} from "../../statistics/stratifiedBootstrap.js";
import type {FairnessAnalysis} from "../FairnessAnalysis.js";
import type {EqualizeAnalysis} from "./EqualizeAnalysis.js";
import {servedGamma} from "./gammaServingHints.js";
import type {SpeedupSpread} from "./speedupSpread.js";

type BeforeAfter = {readonly before: SpeedupSpread; readonly after: SpeedupSpread};

const fixed = (value: number, digits = 3) => (Number.isFinite(value) ? value.toFixed(digits) : "–");
const times = (value: number) => `${fixed(value, 2)}×`;
const withInterval = (value: BootstrapInterval) => `${times(value.estimate)} [${fixed(value.low, 2)}, ${fixed(value.high, 2)}]`;
const change = (before: number, after: number) => `${after >= before ? "+" : "−"}${fixed(Math.abs(100 * (after / before - 1)), 0)}%`;
const beforeAfter = (spread: BeforeAfter) =>
    `max/min ${fixed(spread.before.maxMinRatio, 2)} → ${fixed(spread.after.maxMinRatio, 2)}, variance ${fixed(spread.before.variance, 4)} → ${fixed(spread.after.variance, 4)}`;
/** Narrower only when both measures of spread agree. */
const narrowed = (spread: BeforeAfter) =>
    spread.after.maxMinRatio < spread.before.maxMinRatio && spread.after.variance < spread.before.variance;

/** The Markdown lines of the report's `--equalize` section. */
export function renderEqualizeSection(analysis: FairnessAnalysis, equalize: EqualizeAnalysis): string[] {
    const percent = Math.round(100 * analysis.settings.confidence);
    const global = equalize.globalGamma;
    const identical = equalize.groups.every((group) => group.measured.identicalShareAtOwnGamma === 1);
    const spreadRow = (label: string, spread: SpeedupSpread) =>
        `| ${label} | ${fixed(spread.maxMinRatio, 2)} | ${fixed(spread.variance, 4)} | ${spread.fastestGroup} | ${spread.slowestGroup} |`;
    const {predicted, measured} = equalize.spread;
    const slowest = equalize.groups.find((group) => group.name === measured.before.slowestGroup)!;
    const served = (group: EqualizeAnalysis["groups"][number]) => servedGamma(group, global);
    const contradicted = equalize.groups.filter((group) => served(group) !== group.gamma).map((group) => group.name);
    const notPaying = equalize.groups
        .filter((group) => (served(group) === group.gamma ? group.measured.atOwnGamma : group.measured.atGlobalGamma).high < 1)
        .map((group) => group.name);

    return [
        "## Equalized serving hints (--equalize)",
        "",
        `Per ${analysis.by}, the γ in 1..${equalize.maxGamma} with the largest predicted speed-up S = f_γ(α̂)·t_target(1) / (γ·t_draft + t_target(γ+1)), ` +
            "α̂ from the runs above; then every item re-run at the global γ and at its group's own γ, in one pass (so both see the same machine load). " +
            "Only γ changes and verification stays strict, so every group still gets exactly the target's output distribution: quality is equal by construction" +
            (analysis.settings.temperature === 0
                ? ` (at temperature 0 the re-runs' outputs ${identical ? "all equal" : "do not all equal"} target-only, see the last column). `
                : ". ") +
            "A per-group fuzzy threshold is not offered: it trades accuracy, so each group would need its own accuracy check against strict decoding — that is `specgate calibrate`'s job.",
        "",
        `Cost curve measured once for these predictions, from strict runs at every γ = 0..${equalize.maxGamma} on one prompt of each ${analysis.by} (mean in-run times): t_target(k) = ${equalize.costs.targetMilliseconds.map((value) => fixed(value)).join(", ")} ms ` +
            `for k = 1..${equalize.costs.targetMilliseconds.length}; t_draft = ${fixed(equalize.costs.draftMilliseconds)} ms. It need not grow smoothly with k (llama.cpp picks kernels by batch size), which is why it is measured, not extrapolated.`,
        "",
        `| ${analysis.by} | α̂ | best γ | hint γ | predicted at γ = ${global} | predicted at own γ | measured at γ = ${global} [${percent}% CI] | measured at own γ [${percent}% CI] | α̂ at own γ | mean acc. length at own γ | identical |`,
        "|---|---|---|---|---|---|---|---|---|---|---|",
        ...equalize.groups.map(
            (group) =>
                `| ${group.name} | ${fixed(group.inferredAlpha)} | ${group.gamma} | ${served(group)} | ${times(group.predicted.atGlobalGamma)} | ${times(group.predicted.atOwnGamma)} ` +
                `| ${withInterval(group.measured.atGlobalGamma)} | ${withInterval(group.measured.atOwnGamma)} ` +
                `| ${fixed(group.measured.inferredAlphaAtOwnGamma)} | ${fixed(group.measured.meanAcceptanceLengthAtOwnGamma, 2)} | ${fixed(group.measured.identicalShareAtOwnGamma, 2)} |`
        ),
        "",
        "| speed-up across groups | max/min | variance | fastest | slowest |",
        "|---|---|---|---|---|",
        spreadRow(`predicted, γ = ${global} for all`, predicted.before),
        spreadRow("predicted, own γ", predicted.after),
        spreadRow(`measured, γ = ${global} for all`, measured.before),
        spreadRow("measured, own γ", measured.after),
        "",
        verdict(equalize),
        "",
        ...(contradicted.length === 0
            ? []
            : [
                  `**The re-run contradicts the prediction for ${contradicted.join(", ")}**: at the predicted best γ the whole measured interval lies below the speed-up at γ = ${global}, so the hint γ stays ${global} there. ` +
                      "The cost-curve model leaves out per-step costs (engine glue, and the draft's two-token catch-up after a fully accepted step, which weighs most at small γ), " +
                      "and this machine's load changes between runs: a predicted γ is a candidate, and the re-run is what decides.",
                  ""
              ]),
        ...(notPaying.length === 0
            ? []
            : [
                  `Measured slower than target-only at the hint γ (whole interval below 1×): ${notPaying.join(", ")} — on this machine the verification batches cost more than the accepted drafts save, ` +
                      "so a server may serve these without a draft (the hints file lists them).",
                  ""
              ]),
        `**Against s-CDF.** Per-group γ changes only how each group's acceptance is turned into speed: α_T, D_T and U (${fixed(analysis.across.unfairness.estimate, 4)}) stay as measured above. ` +
            "It needs no training and no new drafter, costs one cost-curve measurement, and a configuration change undoes it. " +
            "s-CDF (Disparate Impacts paper §7) fine-tunes the drafter to raise the under-fit groups' acceptance — the paper reports about 12% lower U and 20% lower variance of acceptance rates — " +
            "which is the only lever when every group's best γ is the same. The two compose: after fine-tuning, α̂ per group changes, so re-run `--equalize`. " +
            `Here serving each group its best γ moved the slowest ${analysis.by} at γ = ${global} (${slowest.name}) from ${times(slowest.measured.atGlobalGamma.estimate)} to ${times(slowest.measured.atOwnGamma.estimate)} measured ` +
            `(${times(slowest.predicted.atGlobalGamma)} → ${times(slowest.predicted.atOwnGamma)} predicted), and the speed-up variance across groups by ${change(measured.before.variance, measured.after.variance)} measured ` +
            `(${change(predicted.before.variance, predicted.after.variance)} predicted).`,
        ""
    ];
}

function verdict(equalize: EqualizeAnalysis): string {
    const {predicted, measured} = equalize.spread;
    if (equalize.choice === "all-at-global-gamma")
        return (
            `**Equalizing cannot narrow the spread here**: every group's best γ is the one already served (γ = ${equalize.globalGamma}), so per-group γ changes nothing ` +
            `and the measured difference (${beforeAfter(measured)}) is run-to-run noise. The spread comes from acceptance itself, which only a better-fitted drafter changes.`
        );
    if (equalize.choice === "one-gamma-for-all")
        return (
            `**Per-group γ cannot narrow the spread here beyond what one global γ does**: every group's best γ is the same (γ = ${equalize.groups[0].gamma}), so the hints amount to a better global γ. ` +
            `Serving it to every group changes the spread (predicted ${beforeAfter(predicted)}; measured ${beforeAfter(measured)}) only because the same γ suits the groups' different α̂ differently, ` +
            "not because any group is treated differently; the spread that remains comes from acceptance, which only a better-fitted drafter changes."
        );
    const word = (spread: BeforeAfter) => (narrowed(spread) ? "narrows" : "does not narrow");
    const reading = narrowed(predicted)
        ? narrowed(measured)
            ? "Each group is served at its own best γ, so no group was slowed to close the gap."
            : "The measurement does not confirm the prediction: read it against the intervals above — with few items the runs' noise can exceed the predicted gain."
        : narrowed(measured)
          ? "The model predicted no narrowing, so read the measured one against the intervals above before relying on it."
          : "Each group's best γ raises the faster groups at least as much as the slower ones; narrowing further would mean serving some group below its best γ, which slows it without speeding anyone up.";
    return `**Per-group γ ${word(predicted)} the predicted spread** (${beforeAfter(predicted)}) and **${word(measured)} the measured one** (${beforeAfter(measured)}). ${reading}`;
}
