import type {FsdPaperCalibrationResult, FsdPaperRow} from "./calibrateFuzzyPaperProcedure.js";

/** The Markdown report of `calibrate --procedure fsd-paper`: each step of the Fuzzy SD paper's App. D procedure and what it chose. */
export function renderFsdPaperCalibrationReport(
    result: FsdPaperCalibrationResult,
    context: {readonly target: string; readonly draft: string; readonly battery: string}
): string {
    const percent = (value: number) => `${(100 * value).toFixed(1)}%`;
    const row = (entry: FsdPaperRow) =>
        `| ${entry.label} | ${entry.gamma ?? "–"} | ${entry.threshold ?? "–"} | ${entry.trials.length} | ${percent(entry.accuracy)} ` +
        `| ${percent(entry.acceptanceRate)} | ${entry.meanAcceptanceLength.toFixed(2)} | ${entry.tokensPerSecond.toFixed(1)} |`;
    const table = (entries: readonly FsdPaperRow[]) => [
        "| configuration | L | T | trials | accuracy | acceptance | mean acc. length | tok/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        ...entries.map(row),
        ""
    ];
    const lines = [
        "# FSD calibration: the Fuzzy SD paper's procedure",
        "",
        `Target \`${context.target}\`, draft \`${context.draft}\`, battery \`${context.battery}\`: ${result.calibrationItems.length} calibration items, ` +
            `${result.evaluationItems.length} evaluation items (disjoint). Drafts are greedy and the target samples on rejection, as in the Fuzzy SD paper's experiments.`,
        "",
        "## 1. SD candidate length",
        "",
        ...table(result.lengths),
        `L′ = ${result.sdLength}: the fastest SD candidate length ("select the L with the fastest inference speed").`,
        "",
        "## 2. The threshold that accepts like SD",
        "",
        ...table(result.acceptanceScan),
        `T_SD = ${result.matchedThreshold}: acceptance closest to SD's at L′.`,
        "",
        "## 3. Stepping T up until accuracy falls 20% of the way to the draft's",
        "",
        ...table([result.targetOnly, result.draftOnly, ...result.steps]),
        `Floor = acc(M_T) − 0.2·(acc(M_T) − acc(M_D)) = ${percent(result.targetOnly.accuracy)} − 0.2·(${percent(result.targetOnly.accuracy)} − ${percent(result.draftOnly.accuracy)}) ` +
            `= ${percent(result.accuracyFloor)}.`,
        "",
        "## Verdict",
        ""
    ];
    if (result.selected == null || result.evaluation == null) {
        lines.push(
            `No stepped threshold kept the mean accuracy above the floor (T_SD = ${result.matchedThreshold} is already at or below it): keep SD.`,
            ""
        );
        return `${lines.join("\n")}\n`;
    }
    const {setting, strict, targetOnly} = result.evaluation;
    lines.push(
        `**Selected: ${result.policySpec} with γ = ${result.selected.gamma}** — the last stepped threshold whose mean accuracy over three trials stayed above the floor.`,
        "",
        "On the evaluation split:",
        "",
        ...table([setting, strict, targetOnly]),
        `Accuracy ${percent(setting.accuracy)} against SD's ${percent(strict.accuracy)}; ${(strict.tokensPerSecond > 0 ? setting.tokensPerSecond / strict.tokensPerSecond : 0).toFixed(2)}× SD's tokens/s.`,
        ""
    );
    return `${lines.join("\n")}\n`;
}
