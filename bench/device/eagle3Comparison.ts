import {formatInterval, goalVerdict, median, medianInterval, medianRatioInterval, type SpeedInterval} from "../speedIntervals.js";

/**
 * The EAGLE-3 head against the draft model at the same γ (issue #45 item 4), read off the device
 * benchmark's strict γ arms: acceptance, accepted tokens per draft step, tokens per target call and
 * tok/s for specgate and llama-speculative-simple, the head over the draft model, and the targets.
 */

/** What the comparison reads of one arm's row (bench/device/deviceBench.ts ArmRow). */
export interface ComparedArm {
    readonly case: string;
    readonly temperature: number;
    readonly specgate: readonly number[];
    readonly native: readonly number[];
    /** Per-repetition specgate / llama.cpp tok/s of interleaved pairs. */
    readonly ratios: readonly number[];
    readonly specgateCounts: {
        readonly emitted: number;
        readonly steps: number;
        readonly drafts: number;
        readonly draftTokens: number;
        readonly accepted: number;
    };
    readonly nativeCounts: {readonly decoded: number; readonly accepted: number; readonly drafted: number};
}

export interface DrafterFigures {
    readonly acceptanceRate: number;
    /** Accepted draft tokens per draft step (γ at most). */
    readonly acceptedPerDraft: number;
    /** Emitted tokens per target call (accepted + 1 per verification). */
    readonly tokensPerTargetCall: number;
    /** Median tok/s over repetitions. */
    readonly tokensPerSecond: number;
}

export interface Eagle3Comparison {
    readonly case: string;
    readonly temperature: number;
    readonly gamma: number;
    readonly specgate: {readonly draftModel: DrafterFigures; readonly head: DrafterFigures};
    readonly llamaCpp: {readonly draftModel: DrafterFigures; readonly head: DrafterFigures};
    /**
     * specgate's head arm over its draft-model arm: the median of per-repetition ratios where the arms
     * ran repetition by repetition (`paired`), else median tok/s over median tok/s.
     */
    readonly headOverDraftModel: SpeedInterval;
    readonly paired: boolean;
    /** specgate with the head over llama-speculative-simple draft-eagle3: median of the interleaved pairs' ratios. */
    readonly headOverLlamaCpp: SpeedInterval;
    /** The targets: the head's acceptance rate ≥ the draft model's; specgate ≥ 1.0× llama.cpp with the head. */
    readonly acceptanceMet: boolean;
    readonly speedVerdict: ReturnType<typeof goalVerdict>;
}

function specgateFigures(arm: ComparedArm): DrafterFigures {
    const counts = arm.specgateCounts;
    return {
        acceptanceRate: counts.accepted / counts.draftTokens,
        acceptedPerDraft: counts.accepted / counts.drafts,
        tokensPerTargetCall: counts.emitted / counts.steps,
        tokensPerSecond: median(arm.specgate)
    };
}

/** llama-speculative-simple drafts γ tokens a step and emits its accepted drafts + 1 per target call. */
function llamaCppFigures(arm: ComparedArm, gamma: number): DrafterFigures {
    const counts = arm.nativeCounts;
    return {
        acceptanceRate: counts.accepted / counts.drafted,
        acceptedPerDraft: counts.accepted / (counts.drafted / gamma),
        tokensPerTargetCall: counts.decoded / (counts.decoded - counts.accepted),
        tokensPerSecond: median(arm.native)
    };
}

/**
 * The comparison of a case and temperature's draft-model and head arms; `interleaved`: their
 * repetitions ran in turn on the same prompts and seeds, so repetition i of one pairs with i of the other.
 */
export function compareEagle3(draftModel: ComparedArm, head: ComparedArm, gamma: number, interleaved: boolean): Eagle3Comparison {
    const headOverLlamaCpp = medianInterval(head.ratios);
    const paired = interleaved && head.specgate.length === draftModel.specgate.length;
    const specgate = {draftModel: specgateFigures(draftModel), head: specgateFigures(head)};
    return {
        case: head.case,
        temperature: head.temperature,
        gamma,
        specgate,
        llamaCpp: {draftModel: llamaCppFigures(draftModel, gamma), head: llamaCppFigures(head, gamma)},
        headOverDraftModel: paired
            ? medianInterval(head.specgate.map((value, index) => value / draftModel.specgate[index]))
            : medianRatioInterval(head.specgate, draftModel.specgate),
        paired,
        headOverLlamaCpp,
        acceptanceMet: specgate.head.acceptanceRate >= specgate.draftModel.acceptanceRate,
        speedVerdict: goalVerdict(headOverLlamaCpp, 1)
    };
}

const fixed = (number: number, digits = 2): string => (Number.isFinite(number) ? number.toFixed(digits) : "–");
const percent = (number: number): string => (Number.isFinite(number) ? `${(100 * number).toFixed(1)}%` : "–");

function figureCells(figures: DrafterFigures): string {
    return `${percent(figures.acceptanceRate)} | ${fixed(figures.acceptedPerDraft)} | ${fixed(figures.tokensPerTargetCall)} | ${fixed(figures.tokensPerSecond, 1)}`;
}

/** The report's section: one row per tool and drafter, then the head over the draft model and the targets. */
export function eagle3ComparisonLines(comparisons: readonly Eagle3Comparison[]): string[] {
    if (comparisons.length === 0) return [];
    const lines = [
        "",
        "## EAGLE-3 head against the draft model (strict, same γ)",
        "",
        "accepted/step = accepted draft tokens per draft step; tokens/call = emitted tokens per target call; tok/s = median over repetitions.",
        "",
        "| case | T | γ | tool | drafter | acceptance | accepted/step | tokens/call | tok/s |",
        "|---|---|---|---|---|---|---|---|---|"
    ];
    for (const comparison of comparisons) {
        const prefix = `| ${comparison.case} | ${comparison.temperature} | ${comparison.gamma}`;
        lines.push(
            `${prefix} | specgate | draft model | ${figureCells(comparison.specgate.draftModel)} |`,
            `${prefix} | specgate | EAGLE-3 head | ${figureCells(comparison.specgate.head)} |`,
            `${prefix} | llama-speculative-simple | draft-simple | ${figureCells(comparison.llamaCpp.draftModel)} |`,
            `${prefix} | llama-speculative-simple | draft-eagle3 | ${figureCells(comparison.llamaCpp.head)} |`
        );
    }
    lines.push(
        "",
        "| case | T | specgate head / draft model tok/s | head acceptance ≥ draft model's | specgate / llama-speculative-simple draft-eagle3 (≥ 1.0×) |",
        "|---|---|---|---|---|"
    );
    for (const comparison of comparisons) {
        const acceptance = `${comparison.acceptanceMet ? "yes" : "**no**"} (${percent(comparison.specgate.head.acceptanceRate)} vs ${percent(comparison.specgate.draftModel.acceptanceRate)})`;
        lines.push(
            `| ${comparison.case} | ${comparison.temperature} | ${formatInterval(comparison.headOverDraftModel, 2, "×")} | ${acceptance} | ` +
                `${formatInterval(comparison.headOverLlamaCpp, 3, "×")}: ${comparison.speedVerdict ?? "–"} |`
        );
    }
    lines.push(
        "",
        comparisons.every((comparison) => comparison.paired)
            ? "The arms ran repetition by repetition (--interleave-arms): head / draft model is the median of per-repetition ratios, as specgate / llama.cpp is."
            : "The head and draft-model arms ran one after the other (each interleaved with its llama.cpp counterpart): head / draft model is a ratio of medians, not paired; specgate / llama.cpp is (--interleave-arms pairs both)."
    );
    return lines;
}
