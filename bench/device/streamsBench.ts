/**
 * Concurrent streams on one batched target (continuous batching, as `specgate serve` runs them): for
 * each level of N streams, fixed draft lengths γ and `draftLength: "auto"` are run as arms, each arm a
 * burst of N concurrent generations on a target loaded with `batchedSequences: N`, the arms rotated
 * round by round (the first arm alternating) so load falls on all of them. Throughput = tokens the
 * burst generated ÷ its wall time. Each arm keeps one SpeculationLoad across its rounds, as a server
 * keeps one: auto learns the step costs and acceptance over the run. γ = 0 is target-only.
 *
 * What it answers: does auto reach the best fixed γ at every concurrency level (≥ 0.97×, with a 95%
 * bootstrap interval of the ratio of medians, bench/speedIntervals.ts)?
 */
import type {NativeBackend} from "../../src/backend/NativeBackend.js";
import {generate} from "../../src/engine/generate.js";
import {SpeculationLoad} from "../../src/engine/SpeculationLoad.js";
import {formatInterval, goalVerdict, median, medianInterval, medianRatioInterval} from "../speedIntervals.js";

export type GammaArm = number | "auto";

export interface StreamsSettings {
    readonly streams: readonly number[];
    readonly gammas: readonly GammaArm[];
    readonly rounds: number;
    readonly maxTokens: number;
    /** Largest draft length auto may choose. */
    readonly autoMax: number;
    /** Epoch milliseconds by which the last burst must have ended. */
    readonly deadline: number;
}

export interface StreamsRow {
    readonly case: string;
    readonly streams: number;
    readonly gamma: string;
    /** Tokens per second of each round's burst. */
    readonly throughput: number[];
    /** Mean chosen draft length of each round (auto; fixed arms: their γ). */
    readonly meanDraftLength: number[];
    skipped?: string;
}

/** A target and draft loaded for `streams` concurrent sequences, and how to free them. */
export interface BatchedPair {
    readonly target: NativeBackend;
    readonly draft: NativeBackend;
    dispose(): Promise<void>;
}

export const gammaLabel = (arm: GammaArm): string => (arm === "auto" ? "auto" : `γ=${arm}`);

/** Parses --gammas 0,2,4,8,auto. */
export function parseGammaArms(text: string): GammaArm[] {
    return text.split(",").map((part) => {
        const value = part.trim();
        if (value === "auto") return "auto";
        if (!/^\d+$/.test(value)) throw new Error(`--gammas: "${value}" is neither a draft length nor auto`);
        return Number(value);
    });
}

/** One burst: `streams` generations at once, prompts cycled; its tokens per second and mean chosen length. */
async function burst(
    pair: BatchedPair,
    arm: GammaArm,
    load: SpeculationLoad,
    promptTokens: readonly number[][],
    settings: StreamsSettings,
    streams: number
): Promise<{throughput: number; meanDraftLength: number}> {
    const sampling = {temperature: 0, topK: 0, topP: 1, minP: 0};
    const options =
        arm === "auto" ? {draftLength: "auto" as const, gamma: Math.min(4, settings.autoMax), maxGamma: settings.autoMax} : {gamma: arm};
    const started = performance.now();
    const results = await Promise.all(
        Array.from({length: streams}, (_unused, index) =>
            generate(
                pair.target,
                arm === 0 ? undefined : pair.draft,
                promptTokens[index % promptTokens.length]!,
                {...options, sampling, maxTokens: settings.maxTokens, ignoreEos: true, seed: index},
                {speculationLoad: load}
            )
        )
    );
    const seconds = (performance.now() - started) / 1000;
    const tokens = results.reduce((sum, result) => sum + result.telemetry.emittedTokens, 0);
    const drafted = results.reduce((sum, result) => sum + result.telemetry.draftTokens, 0);
    const steps = results.reduce((sum, result) => sum + result.telemetry.steps, 0);
    return {throughput: tokens / seconds, meanDraftLength: steps === 0 ? 0 : drafted / steps};
}

/** Every level of one case: loads the pair per level, runs the arms' bursts round by round until `rounds` or the deadline. */
export async function measureStreams(
    caseName: string,
    loadPair: (streams: number) => Promise<BatchedPair>,
    prompts: readonly number[][],
    settings: StreamsSettings,
    log: (text: string) => void
): Promise<StreamsRow[]> {
    const rows: StreamsRow[] = [];
    for (const streams of settings.streams) {
        const levelRows = settings.gammas.map((arm): StreamsRow => ({
            case: caseName,
            streams,
            gamma: gammaLabel(arm),
            throughput: [],
            meanDraftLength: []
        }));
        rows.push(...levelRows);
        if (Date.now() > settings.deadline) {
            for (const row of levelRows) row.skipped = "deadline";
            continue;
        }
        const pair = await loadPair(streams);
        const loads = settings.gammas.map(() => new SpeculationLoad());
        try {
            // Warm-up: contexts, graphs and the auto arm's first cost samples.
            for (const [index, arm] of settings.gammas.entries())
                await burst(pair, arm, loads[index]!, prompts, {...settings, maxTokens: 8}, streams);
            for (let round = 0; round < settings.rounds && Date.now() < settings.deadline; round++) {
                const order = settings.gammas.map((_arm, index) => index);
                if (round % 2 === 1) order.reverse();
                for (const index of order) {
                    const measured = await burst(pair, settings.gammas[index]!, loads[index]!, prompts, settings, streams);
                    levelRows[index]!.throughput.push(measured.throughput);
                    levelRows[index]!.meanDraftLength.push(measured.meanDraftLength);
                }
            }
            log(
                `${caseName} ${streams} streams: ` +
                    levelRows.map((row) => `${row.gamma} ${median(row.throughput).toFixed(1)} tok/s`).join(", ") +
                    ` (${levelRows[0]!.throughput.length} rounds)`
            );
        } catch (error) {
            for (const row of levelRows) row.skipped = `error: ${(error as Error).message.split("\n")[0]}`;
            log(`${caseName} ${streams} streams failed: ${(error as Error).message}`);
        } finally {
            await pair.dispose();
        }
    }
    return rows;
}

/** One table per case: each level's arms, the best fixed γ and auto ÷ best with its interval and verdict. */
export function streamsLines(rows: readonly StreamsRow[], goal = 0.97): string[] {
    if (rows.length === 0) return [];
    const gammas = [...new Set(rows.map((row) => row.gamma))];
    const lines = [
        "",
        "## Concurrent streams: fixed γ and auto (T = 0, strict, model drafter; one batched target per level)",
        "",
        `Throughput = tokens a burst of N concurrent generations produced ÷ its wall time; median over rounds [95% bootstrap interval]; auto ÷ best fixed γ = ratio of medians [95%]; target ≥ ${goal}×.`
    ];
    for (const caseName of [...new Set(rows.map((row) => row.case))]) {
        lines.push(
            "",
            `### ${caseName}`,
            "",
            `| streams | ${gammas.join(" | ")} | best fixed | auto ÷ best fixed | ≥ ${goal}× | auto mean draft length | rounds |`,
            `|---|${gammas.map(() => "---|").join("")}---|---|---|---|---|`
        );
        for (const streams of [...new Set(rows.filter((row) => row.case === caseName).map((row) => row.streams))]) {
            const level = rows.filter((row) => row.case === caseName && row.streams === streams);
            const cells = gammas.map((label) => {
                const row = level.find((entry) => entry.gamma === label);
                return row === undefined || row.throughput.length === 0
                    ? (row?.skipped ?? "–")
                    : formatInterval(medianInterval(row.throughput), 1);
            });
            const fixedRows = level.filter((row) => row.gamma !== "auto" && row.throughput.length > 0);
            const best = fixedRows.sort((a, b) => median(b.throughput) - median(a.throughput))[0];
            const auto = level.find((row) => row.gamma === "auto" && row.throughput.length > 0);
            const ratio = best !== undefined && auto !== undefined ? medianRatioInterval(auto.throughput, best.throughput) : undefined;
            const decided = ratio === undefined ? null : goalVerdict(ratio, goal);
            const verdict = decided === null ? "–" : {met: "yes", missed: "**no**", undecided: "undecided"}[decided];
            lines.push(
                `| ${streams} | ${cells.join(" | ")} | ${best?.gamma ?? "–"} | ${ratio === undefined ? "–" : formatInterval(ratio, 3, "×")} | ${verdict} | ` +
                    `${auto === undefined ? "–" : median(auto.meanDraftLength).toFixed(2)} | ${level[0]?.throughput.length ?? 0} |`
            );
        }
    }
    return lines;
}
