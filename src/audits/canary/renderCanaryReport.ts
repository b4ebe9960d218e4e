import type {CanaryResult} from "./runCanary.js";

const MAX_LISTED = 50;

function percent(value: number): string {
    return `${(100 * value).toFixed(2)}%`;
}

/** Markdown inline code that survives backticks and newlines in model output. */
function code(text: string): string {
    const flat = text.replace(/\n/g, "⏎").replace(/\|/g, "\\|");
    return flat.includes("`") ? `\`\` ${flat} \`\`` : `\`${flat}\``;
}

/** A Markdown report of a canary run for a person: verdict first, then the evidence. */
export function renderCanaryReport(result: CanaryResult): string {
    const lines: string[] = [];
    lines.push("# Decode-path drift canary", "");
    const verdicts = {
        pass: "**PASS**",
        drift: "**FAIL** (drift)",
        "could-not-compare": "**COULD NOT COMPARE**",
        "insufficient-data": "**INSUFFICIENT DATA**"
    } as const;
    lines.push(result.verdict === "pass" ? verdicts.pass : `${verdicts[result.verdict]}: ${result.failures.join("; ")}`, "");
    lines.push("| | path A | path B |", "|---|---|---|");
    lines.push(`| name | ${code(result.paths.a.name)} | ${code(result.paths.b.name)} |`);
    lines.push(`| fingerprint | \`${result.paths.a.fingerprint}\` | \`${result.paths.b.fingerprint}\` |`);
    const expected = (value: string | null, matches: boolean | null) =>
        value === null ? "not checked" : `\`${value}\` (${matches === true ? "matches" : "DIFFERS"})`;
    lines.push(
        `| expected fingerprint | ${expected(result.paths.a.expectedFingerprint, result.paths.a.fingerprintMatches)} | ${expected(result.paths.b.expectedFingerprint, result.paths.b.fingerprintMatches)} |`
    );
    lines.push(
        `| server system_fingerprint | ${result.paths.a.systemFingerprints.join(", ") || "–"} | ${result.paths.b.systemFingerprints.join(", ") || "–"} |`
    );
    lines.push("");
    lines.push("## Summary", "");
    const skippedPrompts = new Set(result.skipped.map((entry) => entry.id)).size;
    lines.push(
        `- prompts: ${result.prompts}, compared: ${result.compared}${result.errors.length > 0 ? `, failed requests: ${result.errors.length}` : ""}` +
            `${skippedPrompts > 0 ? `, skipped (prompt exceeds the context): ${skippedPrompts}` : ""}`
    );
    lines.push(`- exact match: ${result.exactMatches} / ${result.compared} (${percent(result.exactMatchRate)})`);
    lines.push(
        `- mismatch rate: ${percent(result.mismatchRate)} (95% Wilson CI ${percent(result.mismatchRate95.lower)}–${percent(result.mismatchRate95.upper)}), bound ${percent(result.maxMismatch)}`
    );
    lines.push(`- outputs with tool calls: ${result.toolCallOutputs}, with differing arguments: ${result.toolCallArgumentMismatches}`);
    lines.push("");
    lines.push(
        "## Compounding risk over a k-call session",
        "",
        `Chance that at least one of k calls diverges, 1 − (1 − p)^k, at p = ${percent(result.compoundingRisk[0]?.risk ?? 1)}, the mismatch rate's 95% upper bound: the most the data cannot rule out.`,
        ""
    );
    lines.push(`| k | ${result.compoundingRisk.map((entry) => entry.calls).join(" | ")} |`);
    lines.push(`|---|${result.compoundingRisk.map(() => "---").join("|")}|`);
    lines.push(`| risk | ${result.compoundingRisk.map((entry) => percent(entry.risk)).join(" | ")} |`, "");
    if (result.mismatches.length > 0) {
        lines.push("## Mismatches", "");
        lines.push(
            "A small top-2 logit gap at the divergent token means a near-tie that tiny numeric differences flip; a large gap means the paths compute different things.",
            ""
        );
        lines.push("| id | task | char | token | top-2 gap | A | B |", "|---|---|---|---|---|---|---|");
        for (const mismatch of result.mismatches.slice(0, MAX_LISTED)) {
            const gap = mismatch.logitGap === null ? "–" : mismatch.logitGap.gap.toPrecision(3);
            lines.push(
                `| ${code(mismatch.id)} | ${mismatch.task} | ${mismatch.firstDivergentCharIndex} | ${mismatch.firstDivergentTokenIndex ?? "–"} | ${gap} | ${code(mismatch.excerptA)} | ${code(mismatch.excerptB)} |`
            );
        }
        if (result.mismatches.length > MAX_LISTED)
            lines.push("", `… and ${result.mismatches.length - MAX_LISTED} more (see the JSON output).`);
        lines.push("");
    }
    const toolDiffs = result.mismatches.filter((mismatch) => mismatch.toolCallDifferences.length > 0);
    if (toolDiffs.length > 0) {
        lines.push("## Tool-call argument differences", "", "| id | call | field | A | B |", "|---|---|---|---|---|");
        for (const mismatch of toolDiffs.slice(0, MAX_LISTED))
            for (const call of mismatch.toolCallDifferences)
                for (const difference of call.differences)
                    lines.push(
                        `| ${code(mismatch.id)} | ${call.name ?? `#${call.call}`} | ${code(difference.path)} | ${code(JSON.stringify(difference.a) ?? "(missing)")} | ${code(JSON.stringify(difference.b) ?? "(missing)")} |`
                    );
        lines.push("");
    }
    if (result.skipped.length > 0) {
        lines.push("## Skipped prompts (longer than the context)", "");
        for (const entry of result.skipped.slice(0, MAX_LISTED))
            lines.push(`- ${code(entry.id)} on path ${entry.path.toUpperCase()}: ${entry.message}`);
        lines.push("");
    }
    if (result.errors.length > 0) {
        lines.push("## Failed requests", "");
        for (const error of result.errors.slice(0, MAX_LISTED))
            lines.push(`- ${code(error.id)} on path ${error.path.toUpperCase()}: ${error.message}`);
        lines.push("");
    }
    return lines.join("\n");
}
