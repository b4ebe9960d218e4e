import type {ScorePreservingOracleMeasurement} from "./measureScorePreservingOracle.js";
import type {SweepPoint, SweepResult} from "./SweepResult.js";

export interface SweepReportContext {
    readonly target: string;
    readonly draft: string;
    readonly battery: string;
    /** Path of frontier.png relative to the report, when plots were written. */
    readonly plot?: string;
}

/**
 * The sweep as Markdown: one row per configuration and baseline, in the columns of the Fuzzy SD paper Table 2
 * and the Calibrated SD paper Table 1 (accuracy, tokens/s, speed-up, acceptance), plus what a tuning decision
 * needs: the CI, the change against strict SD at the same γ, and the random-allocation accuracy at
 * equal speed.
 */
export function renderSweepReport(result: SweepResult, context: SweepReportContext): string {
    const {settings, points} = result;
    const strictAt = new Map(points.filter((point) => point.role === "strict").map((point) => [point.gamma, point]));
    const percent = (value: number) => (100 * value).toFixed(1);
    const lines = [
        "# Accuracy / speed sweep",
        "",
        `Target \`${context.target}\`, draft \`${context.draft}\`, battery \`${context.battery}\` (${settings.items} items), ` +
            `temperature ${settings.sampling.temperature}, max ${settings.maxTokens} tokens${settings.stop.length === 0 ? "" : `, stop ${settings.stop.map((text) => JSON.stringify(text)).join(", ")}`}, seed ${settings.seed}.`,
        "",
        "| Method | γ | Acc (%) | 95% CI | Tok/s | Spd | ALen | AR | Draft tok. | ΔAcc vs SD (pt) | Rand. alloc. Acc | Frontier | Spd₁ | Rand. alloc. Acc₁ | Frontier₁ |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|:---:|---:|---:|:---:|"
    ];
    for (const point of points) {
        const strict = point.gamma == null ? undefined : strictAt.get(point.gamma);
        const speculative = point.gamma != null;
        const delta = strict == null || point.role === "strict" ? "" : signed(100 * (point.accuracy - strict.accuracy));
        lines.push(
            `| ${point.label} | ${point.gamma ?? "–"} | ${percent(point.accuracy)} | ${percent(point.interval.lower)}–${percent(point.interval.upper)} | ` +
                `${point.tokensPerSecond.toFixed(1)} | ${point.speedup.toFixed(2)}× | ${speculative ? point.meanAcceptanceLength.toFixed(2) : "–"} | ` +
                `${speculative ? `${percent(point.acceptanceRate)}%` : "–"} | ${speculative ? `${percent(point.draftTokenShare)}%` : point.role === "draft-only" ? "100%" : "0%"} | ` +
                `${delta} | ${point.randomAllocationAccuracy == null ? "–" : percent(point.randomAllocationAccuracy)} | ${point.onFrontier ? "★" : ""} | ` +
                `${oneStepCells(point.oneStepVerification, percent)} |`
        );
    }
    lines.push("");
    if (context.plot != null) lines.push(`![Accuracy vs tokens/s](${context.plot})`, "");
    lines.push("## Findings", "");
    const truncated = truncationWarning(points, settings.maxTokens);
    if (truncated != null) lines.push(truncated);
    lines.push(
        ...frontierFindings(
            points.map((point) => ({
                point,
                speed: point.tokensPerSecond,
                onFrontier: point.onFrontier,
                allocationAccuracy: point.randomAllocationAccuracy
            })),
            "measured",
            percent
        )
    );
    if (points.every((point) => point.oneStepVerification != null)) {
        lines.push(
            ...frontierFindings(
                points.map((point) => ({
                    point,
                    speed: point.oneStepVerification!.tokensPerSecond,
                    onFrontier: point.oneStepVerification!.onFrontier,
                    allocationAccuracy: point.oneStepVerification!.randomAllocationAccuracy
                })),
                "one-step verification",
                percent
            )
        );
    }
    for (const point of points.filter((candidate) => candidate.role === "random-acceptance")) {
        const matched = points.find((candidate) => candidate.label === point.matchedTo);
        if (matched == null) continue;
        lines.push(
            `- ${matched.label}: ${percent(matched.accuracy)}% at acceptance ${percent(matched.acceptanceRate)}%; random acceptance at ${percent(point.acceptanceRate)}%: ${percent(point.accuracy)}% (${signed(100 * (matched.accuracy - point.accuracy))} pt for choosing tokens by the policy).`
        );
    }
    const best = bestWithinOnePoint(points, strictAt);
    if (best != null) {
        const strict = strictAt.get(best.gamma)!;
        lines.push(
            `- Longest mean acceptance within 1 point of strict SD: ${best.label}, ALen ${best.meanAcceptanceLength.toFixed(2)} vs ${strict.meanAcceptanceLength.toFixed(2)} ` +
                `(${signed(100 * (best.meanAcceptanceLength / strict.meanAcceptanceLength - 1))}%), accuracy ${signed(100 * (best.accuracy - strict.accuracy))} pt.`
        );
    }
    if (result.oracle != null && result.oracle.length > 0) lines.push(...oracleSection(result.oracle, points, strictAt, percent));
    lines.push(
        "",
        "ALen: mean acceptance length (1 + accepted / drafts); AR: accepted / drafted tokens; Draft tok.: share of output tokens that are accepted draft tokens; " +
            "Rand. alloc. Acc: accuracy of sending a random share of queries to the target and the rest to the draft alone, at this row's tokens/s. " +
            "Spd₁, Rand. alloc. Acc₁, Frontier₁: the same quantities if verifying γ + 1 tokens cost one target step (the memory-bound regime of a GPU serving a large target), " +
            "from each row's counts and the per-token times of the target-only and draft-only rows of this run (src/tune/oneStepVerificationSeconds.ts). " +
            "Differences smaller than the CI widths are noise: sweep a larger battery before acting on them.",
        ""
    );
    return lines.join("\n");
}

interface FrontierView {
    readonly point: SweepPoint;
    readonly speed: number;
    readonly onFrontier: boolean;
    readonly allocationAccuracy: number | null;
}

/** The frontier, fastest first, and whether each of its speculative points beats random allocation at its speed. */
function frontierFindings(views: readonly FrontierView[], regime: string, percent: (value: number) => string): string[] {
    const frontier = views.filter((view) => view.onFrontier).sort((a, b) => b.speed - a.speed);
    const lines = [
        `- Pareto frontier, ${regime} speed (fastest first): ${frontier.map((view) => `${view.point.label} (${percent(view.point.accuracy)}%, ${view.speed.toFixed(1)} tok/s)`).join("; ")}.`
    ];
    const comparable = frontier.filter(
        (view) => view.allocationAccuracy != null && view.point.role !== "target-only" && view.point.role !== "draft-only"
    );
    const beaten = comparable.filter((view) => view.point.accuracy <= view.allocationAccuracy!);
    if (comparable.length === 0)
        lines.push(
            `- ${regime}: no frontier configuration lies within the speed range of the random-allocation line (draft-only to target-only).`
        );
    else if (beaten.length === 0)
        lines.push(
            `- ${regime}: every frontier configuration within the random-allocation speed range (${comparable.length}) beats random allocation at equal speed.`
        );
    else
        lines.push(
            `- ${regime}: **random allocation matches or beats** ${beaten.map((view) => view.point.label).join(", ")} at equal speed: routing whole queries would do as well.`
        );
    return lines;
}

/**
 * The headroom table: per γ, strict SD against the score-preserving oracle (overall and per task),
 * and how much of the oracle's gain the best policy within 1 point took.
 */
function oracleSection(
    oracle: readonly ScorePreservingOracleMeasurement[],
    points: readonly SweepPoint[],
    strictAt: ReadonlyMap<number | null, SweepPoint>,
    percent: (value: number) => string
): string[] {
    const gain = (totals: {meanAcceptanceLength: number}, strict: {meanAcceptanceLength: number}) =>
        signed(100 * (totals.meanAcceptanceLength / strict.meanAcceptanceLength - 1));
    const lines = [
        "",
        "## Headroom: the score-preserving oracle",
        "",
        "At each mismatch the oracle finishes the item from the draft's token with the target alone and accepts the token if the item still passes: " +
            "an estimate of the mean acceptance length a lossy policy could reach on this battery without losing an item (a rule that follows the draft further can exceed it where the draft is the better model; src/tune/measureScorePreservingOracle.ts).",
        "",
        "| γ | Task | Items | Strict Acc (%) | Oracle Acc (%) | Strict ALen | Oracle ALen | Oracle gain | Rescued / checked mismatches |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|"
    ];
    for (const measurement of oracle) {
        const rows = [
            {task: "all", items: measurement.items, strict: measurement.strict, oracle: measurement.oracle},
            ...(measurement.byTask.length > 1 ? measurement.byTask : [])
        ];
        for (const row of rows) {
            lines.push(
                `| ${measurement.gamma} | ${row.task} | ${row.items} | ${percent(row.strict.correct / row.items)} | ${percent(row.oracle.correct / row.items)} | ` +
                    `${row.strict.meanAcceptanceLength.toFixed(2)} | ${row.oracle.meanAcceptanceLength.toFixed(2)} | ${gain(row.oracle, row.strict)}% | ${row.oracle.rescuedTokens} / ${row.oracle.checkedMismatches} |`
            );
        }
    }
    lines.push("");
    for (const measurement of oracle) {
        const strict = strictAt.get(measurement.gamma);
        const best = bestWithinOnePoint(
            points.filter((point) => point.gamma === measurement.gamma),
            strictAt
        );
        const bestText =
            best == null || strict == null
                ? "no policy row within 1 point at this γ"
                : `the best policy within 1 point, ${best.label}, ${gain(best, strict)}%`;
        lines.push(
            `- γ = ${measurement.gamma}: the oracle gains ${gain(measurement.oracle, measurement.strict)}% mean acceptance length over strict SD at no loss; ${bestText}.`
        );
    }
    return lines;
}

function oneStepCells(point: SweepPoint["oneStepVerification"], percent: (value: number) => string): string {
    if (point == null) return "– | – | ";
    return `${point.speedup.toFixed(2)}× | ${point.randomAllocationAccuracy == null ? "–" : percent(point.randomAllocationAccuracy)} | ${point.onFrontier ? "★" : ""}`;
}

function signed(value: number): string {
    return `${value >= 0 ? "+" : ""}${value.toFixed(1)}`;
}

function bestWithinOnePoint(
    points: readonly SweepPoint[],
    strictAt: ReadonlyMap<number | null, SweepPoint>
): (SweepPoint & {gamma: number}) | undefined {
    let best: (SweepPoint & {gamma: number}) | undefined;
    for (const point of points) {
        if (point.role !== "policy" || point.gamma == null) continue;
        const strict = strictAt.get(point.gamma);
        if (strict == null || 100 * (strict.accuracy - point.accuracy) > 1) continue;
        if (best == null || point.meanAcceptanceLength > best.meanAcceptanceLength) best = point as SweepPoint & {gamma: number};
    }
    return best;
}

/**
 * A warning when target-only answers ran into --max-tokens: such answers may be cut short and
 * scored wrong in every row alike, which hides real differences (a sweep at 40 tokens once failed
 * every 45–80-token tool call this way). Null when none did.
 */
export function truncationWarning(points: readonly Pick<SweepPoint, "role" | "outcomes">[], maxTokens: number): string | null {
    const targetOnly = points.find((point) => point.role === "target-only");
    if (targetOnly == null) return null;
    const capped = targetOnly.outcomes.filter((outcome) => outcome.tokens >= maxTokens).length;
    if (capped === 0) return null;
    return `- **${capped} of ${targetOnly.outcomes.length} target-only answers stopped at --max-tokens (${maxTokens})**: they may be cut short and scored wrong in every row; raise --max-tokens unless your answers are meant to be that long.`;
}
