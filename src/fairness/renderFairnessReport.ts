import {renderEqualizeSection} from "./equalize/renderEqualizeSection.js";
import type {FairnessAnalysis} from "./FairnessAnalysis.js";
import {fairnessConclusion} from "./fairnessConclusion.js";

export interface FairnessReportContext {
    readonly target: string;
    readonly draft: string;
    readonly battery: string;
    /** Plot paths relative to the report (SVG and PNG of each plot), when plots were written. */
    readonly plots?: {readonly speedup: string; readonly scatter: string; readonly textRendered: boolean};
}

/** The Markdown report of `specgate fairness analyze`, with a section on how to read it. */
export function renderFairnessReport(analysis: FairnessAnalysis, context: FairnessReportContext): string {
    const {settings, across} = analysis;
    const percent = Math.round(100 * settings.confidence);
    const fixed = (value: number | null, digits = 3) => (value == null || !Number.isFinite(value) ? "–" : value.toFixed(digits));
    const interval = (value: {estimate: number; low: number; high: number}, digits = 3, unit = "") =>
        `${fixed(value.estimate, digits)}${unit} [${fixed(value.low, digits)}, ${fixed(value.high, digits)}]`;
    const rho = (value: number | null) => (value == null ? "undefined" : value.toFixed(2));
    const times = (value: number | null) => (value == null || !Number.isFinite(value) ? "–" : `${value.toFixed(2)}×`);
    const skipped = analysis.context.skipped.length;
    const nonIdentical = analysis.items.filter((item) => !item.run.identical).length;

    const lines = [
        "# Speculative decoding fairness report",
        "",
        `Target \`${context.target}\`, draft \`${context.draft}\`, battery \`${context.battery}\` grouped by **${analysis.by}** ` +
            `(${analysis.groups.length} groups, ${analysis.items.length} items${skipped > 0 ? `; ${skipped} more skipped, their prompt too long for the context` : ""}). Strict verification, γ = ${settings.gamma}, ` +
            `temperature ${settings.temperature}, up to ${settings.maxTokens} tokens per item; distributions at temperature ${settings.distributionTemperature}; ` +
            `${percent}% percentile-bootstrap intervals from ${settings.resamples} resamples of items within each group (seed ${settings.seed}).`,
        "",
        "## Summary",
        "",
        ...fairnessConclusion(analysis).map((line) => `- ${line.replace(/^conclusion: /, "**Conclusion**: ")}`),
        `- **Unfairness U = ${interval(across.unfairness, 4)}** (nats²). Best-served ${analysis.by}: **${across.bestServedGroup}** ` +
            `(D_min = ${fixed(across.minimumCrossEntropy)}); worst-served: **${across.worstServedGroup}**.`,
        `- **Speed-up spread**: fastest ${across.speedup.fastestGroup}, slowest ${across.speedup.slowestGroup}; ` +
            `max/min ratio ${fixed(across.speedup.maxMinRatio, 2)}, variance ${fixed(across.speedup.variance, 4)}.`,
        `- Variance of measured α_T across groups ${fixed(across.acceptanceVariance, 4)} (analytic α: ${fixed(across.analyticAlphaVariance, 4)}).`,
        `- Spearman ρ(drafter fitness, measured α): ${rho(across.fitnessAlphaSpearman.groups)} across groups, ` +
            `${rho(across.fitnessAlphaSpearman.items)} across items; ρ(D_T, α): ${rho(across.divergenceAlphaSpearman)} across groups.`,
        across.costCurve == null
            ? "- Cost curve: not measured (no full-γ verification or zero timings), so neither the cost-curve S nor the Disparate Impacts paper's S_T."
            : `- Measured cost curve: t_target(1) = ${fixed(across.costCurve.targetTimeOne, 3)} ms, t_target(γ+1) = ${fixed(across.costCurve.targetTimeVerify, 3)} ms, ` +
              `t_draft = ${fixed(across.costCurve.draftTime, 3)} ms.`,
        "",
        "## Per group",
        "",
        `| ${analysis.by} | items | α_T measured | α̂ | mean acc. length | speed-up [${percent}% CI] | cost-curve S (α̂) | paper S_T | analytic α | argmax agreement | D_T [${percent}% CI] | KL | TV | fitness 1 − r_q | r_p | \\|α − (1 − r_q)\\| |`,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ...analysis.groups.map((group) => {
            const {measured, distributions} = group;
            return (
                `| ${group.name} | ${group.items} | ${fixed(measured.acceptanceRate)} | ${fixed(measured.inferredAlpha)} | ${fixed(measured.meanAcceptanceLength, 2)} ` +
                `| ${interval(measured.speedup, 2, "×")} | ${times(measured.costCurveSpeedup)} | ${times(measured.seedSpeedup)} ` +
                `| ${fixed(distributions.alpha)} | ${fixed(distributions.argmaxAgreement)} | ${interval(distributions.crossEntropy)} | ${fixed(distributions.kl)} | ${fixed(distributions.tv)} ` +
                `| ${fixed(distributions.fitness)} | ${fixed(distributions.targetMisfit)} | ${fixed(distributions.fitnessGap)} |`
            );
        }),
        ""
    ];
    if (context.plots != null) {
        lines.push(
            "## Plots",
            "",
            `![Speed-up per ${analysis.by}](${context.plots.speedup})`,
            "",
            `![α vs D_T](${context.plots.scatter})`,
            ""
        );
        if (!context.plots.textRendered)
            lines.push("No TrueType font was found, so the PNGs carry no text; the SVGs beside them have every label.", "");
    }
    if (analysis.equalize != null) lines.push(...renderEqualizeSection(analysis, analysis.equalize));
    lines.push(
        "## How to read this",
        "",
        "- **Groups** are the Disparate Impacts paper's tasks T. Each item runs twice on the same prompt and seed: target-only and speculative (strict, so the output is the target's). " +
            "**Speed-up** is speculative over target-only tokens per second, pooled over the group's items; the interval resamples items. " +
            "Overlapping intervals mean this battery cannot tell the groups apart.",
        "- **α_T measured** is accepted / drafted tokens; **α̂** is the per-position acceptance that explains the accepted tokens per step; " +
            "**cost-curve S (α̂)** = f_γ(α̂)·t_target(1) / (γ·t_draft + t_target(γ+1)) with the measured cost curve. A measured speed-up far below it means overhead, not acceptance, limits the group.",
        "- **paper S_T** is the Disparate Impacts paper's task speed-up, E_{s~T}[f_γ(α(s)) / (1 + γc)] (its eq. 4): f_γ of the teacher-forced analytic α(s) at every position, " +
            "averaged, over 1 + γc with c = t_draft / t_target(1). It prices a verification like one target step and uses α of sampled drafts, " +
            "so it is the paper's model of the group, not a prediction of this machine's speed-up; the cost-curve S is that.",
        "- **Analytic α, D_T, KL, TV** come from teacher forcing: both models read prompt + reference (or, without one, the target's own output) and every position " +
            "compares the target's next-token distribution p with the draft's q. α = E[Σ min(p, q)] is the acceptance of sampled drafts; at temperature 0 the measured α_T tracks the **argmax agreement** instead.",
        "- **D_T** = E[−Σ p log q] is the cross-entropy of the draft against the target; lower is a better-served group. **U** = (1/m) Σ (D_T − D_min)² is 0 when every group is served like the best one; " +
            "U is never negative and sampling noise alone makes it positive, so its interval rarely reaches 0: read disparity from D_T intervals that do not overlap, and U's size against its interval.",
        "- **Drafter fitness** 1 − r_q, r_q = E[1 − q(reference token)], is how well the draft fits the data; **r_p** is the same for the target. " +
            "The Disparate Impacts paper Theorem 2 bounds |α − (1 − r_q)| by r_p, so with a well-fit target (small r_p) fitness predicts acceptance. " +
            "A positive ρ(fitness, α) and a negative ρ(D_T, α) are the pattern the seed reports (ρ = 0.44 over MGSM items for Qwen2.5 0.5B/3B).",
        "- **Caveats**: timings come from this machine under its load at the time; with few items or few groups, ρ and the max/min ratio are fragile. " +
            `${skipped} of ${skipped + analysis.items.length} item(s) were skipped, their prompt too long for the ${analysis.context.size}-token context ` +
            `with ${settings.maxTokens} generated tokens (not measured; no prompt is cut); ${nonIdentical} item(s) produced a speculative output different from target-only ` +
            "(expected only at temperature > 0, where both are samples).",
        ""
    );
    return lines.join("\n");
}
