import type {CalibrationResult, CalibrationRow} from "./calibrateSetting.js";

export interface CalibrationReportContext {
    readonly target: string;
    readonly draft: string;
    readonly battery: string;
}

/**
 * The calibration as Markdown: every candidate on the calibration split, then the verdict — the
 * chosen setting with its accuracy (Wilson CI) and speed on the evaluation split, or a plain
 * statement that no setting met the budget, or that none within it gained anything over strict SD.
 */
export function renderCalibrationReport(result: CalibrationResult, context: CalibrationReportContext): string {
    const percent = (value: number) => (100 * value).toFixed(1);
    const interval = (row: CalibrationRow) => `${percent(row.interval.lower)}–${percent(row.interval.upper)}`;
    const budget = result.maxAccuracyDrop.toFixed(1);
    const lines = [
        `# Calibrating ${result.policy} (${result.parameter}) for an accuracy drop of at most ${budget} pt vs strict SD`,
        "",
        `Target \`${context.target}\`, draft \`${context.draft}\`, battery \`${context.battery}\`: ${result.calibrationItems.length} calibration items, ` +
            `${result.evaluationItems.length} evaluation items (disjoint, stratified by task, split by item-id hash).`,
        "",
        "## Calibration split",
        "",
        "| Setting | γ | Acc (%) | 95% CI | ΔAcc vs SD (pt) | Tok/s | ALen | AR | Within budget | ALen > SD |",
        "|---|---:|---:|---|---:|---:|---:|---:|:---:|:---:|"
    ];
    for (const strict of result.strict) {
        lines.push(
            `| ${strict.label.replace(/^calibration: /, "")} | ${strict.gamma} | ${percent(strict.accuracy)} | ${interval(strict)} | – | ${strict.tokensPerSecond.toFixed(1)} | ` +
                `${strict.meanAcceptanceLength.toFixed(2)} | ${percent(strict.acceptanceRate)}% | reference | – |`
        );
        for (const candidate of result.candidates.filter((row) => row.gamma === strict.gamma)) {
            const chosen = candidate === result.selected;
            lines.push(
                `| ${chosen ? "**" : ""}${candidate.label.replace(/^calibration: /, "")}${chosen ? "**" : ""} | ${candidate.gamma} | ${percent(candidate.accuracy)} | ${interval(candidate)} | ` +
                    `${(-candidate.accuracyDrop).toFixed(1)} | ${candidate.tokensPerSecond.toFixed(1)} | ${candidate.meanAcceptanceLength.toFixed(2)} | ${percent(candidate.acceptanceRate)}% | ${candidate.withinBudget ? "yes" : "no"} | ${candidate.gainsOverStrict ? "yes" : "no"} |`
            );
        }
    }
    lines.push("", "## Verdict", "");
    // A budget narrower than the noise of the split is met or missed by chance; say so up front.
    const widest = Math.max(...result.strict.map((row) => 100 * (row.interval.upper - row.interval.lower)));
    if (widest > 2 * result.maxAccuracyDrop)
        lines.push(
            `Note: strict SD's 95% CI on the calibration split is ${widest.toFixed(1)} pt wide, far wider than the ${budget} pt budget; ` +
                "with this few items the choice below is not reliable. Use a larger battery.",
            ""
        );
    const affordable = result.candidates.filter((candidate) => candidate.withinBudget);
    if ((result.selected == null || result.evaluation == null) && affordable.length > 0) {
        const best = [...affordable].sort((a, b) => b.meanAcceptanceLength - a.meanAcceptanceLength)[0];
        const reference = result.strict.find((row) => row.gamma === best.gamma);
        lines.push(
            `**No ${result.policy} setting beats strict SD within the budget.** The ${affordable.length} setting(s) within ${budget} pt accept no more tokens per verification than strict SD at the same γ ` +
                `(best: ${best.label.replace(/^calibration: /, "")}, mean acceptance length ${best.meanAcceptanceLength.toFixed(2)} vs ${reference?.meanAcceptanceLength.toFixed(2) ?? "–"}), so they would risk accuracy for no speed.`,
            "Keep strict SD (lossless, and at least as fast), or accept a larger --max-accuracy-drop to reach thresholds that accept more.",
            ""
        );
        return lines.join("\n");
    }
    if (result.selected == null || result.evaluation == null) {
        const closest = [...result.candidates].sort((a, b) => a.accuracyDrop - b.accuracyDrop)[0];
        lines.push(
            `**No ${result.policy} setting meets the budget.** Every threshold × γ tried loses more than ${budget} pt against strict SD on the calibration split` +
                (closest == null
                    ? "."
                    : ` (closest: ${closest.label.replace(/^calibration: /, "")}, ${closest.accuracyDrop.toFixed(1)} pt).`),
            "Keep strict SD (lossless), try lower thresholds or other γ, or accept a larger --max-accuracy-drop.",
            ""
        );
        return lines.join("\n");
    }
    const {setting, strict, targetOnly, accuracyDrop, withinBudget, speedupOverStrict, speedupOverTargetOnly} = result.evaluation;
    const selected = result.selected;
    const fastest =
        result.speed === "one-step"
            ? "the fastest at one-step verification (verifying γ + 1 tokens costs one target step)"
            : "the fastest measured";
    lines.push(
        `**Selected: ${setting.policy} with γ = ${selected.gamma}** — ${fastest} setting within ${budget} pt on the calibration split ` +
            `(drop ${selected.accuracyDrop.toFixed(1)} pt, ${selected.rankingTokensPerSecond.toFixed(1)} tok/s${result.speed === "one-step" ? " at one-step verification" : ""}).`,
        ""
    );
    lines.push(
        `On the evaluation split (${setting.items} items the choice never saw):`,
        "",
        "| Setting | Acc (%) | 95% CI | Tok/s | ALen | Draft tok. |",
        "|---|---:|---|---:|---:|---:|"
    );
    for (const row of [setting, strict, targetOnly])
        lines.push(
            `| ${row.label.replace(/^evaluation: /, "")} | ${percent(row.accuracy)} | ${interval(row)} | ${row.tokensPerSecond.toFixed(1)} | ` +
                `${row.gamma == null ? "–" : row.meanAcceptanceLength.toFixed(2)} | ${row.gamma == null ? "–" : `${percent(row.draftTokenShare)}%`} |`
        );
    lines.push(
        "",
        `Accuracy drop vs strict SD on the evaluation split: ${accuracyDrop.toFixed(1)} pt — ` +
            (withinBudget
                ? `within the ${budget} pt budget.`
                : `**over the ${budget} pt budget**: the calibration split did not predict it; use a larger battery or a lower threshold.`) +
            ` Speed: ${speedupOverStrict.toFixed(2)}× strict SD, ${speedupOverTargetOnly.toFixed(2)}× target-only` +
            (result.evaluation.oneStep == null
                ? "."
                : `; at one-step verification ${result.evaluation.oneStep.speedupOverStrict.toFixed(2)}× strict SD, ${result.evaluation.oneStep.speedupOverTargetOnly.toFixed(2)}× target-only.`)
    );
    lines.push(`Use it with: \`--policy '${result.policySpec}' --gamma ${selected.gamma}\`.`, "");
    return lines.join("\n");
}
