/**
 * A deterministic replay of `bench:serve`'s `--gamma auto` arm beside fixed γ: the real chooser
 * (AdaptiveDraftLength on a shared SpeculationLoad, as `specgate serve` runs it) drives simulated
 * steps whose costs come from measured step costs and whose acceptance comes from recorded traces
 * (bench/gammaAutoRecord.ts), so the controller's decisions are compared without a machine's noise.
 *
 * What it models: S streams, each sending `--requests` requests one after another (prompt
 * (client · requests + request) mod P, as bench/serveLoad.ts), all live requests stepping together
 * (serve's continuous batching in lockstep): each chooses its draft length, the draft model runs one
 * batched call per draft position (the sequences still drafting), then one shared target step of
 * every sequence's tokens (a new request's prompt among them) costed by StepCostModel (passes of equal
 * lengths above 4 sequences, a rebuild when the step's shape changes), then each sequence's own
 * bookkeeping, one after another on one event loop (`--overhead` ms each, measured by the recorder as
 * the engine's time per step outside its model calls). At T = 0 with greedy drafts, a k-token draft
 * from position p accepts the recorded run of draft/target agreement from p, capped at k.
 * What it leaves out: HTTP and streaming costs per token (the same for every arm; they shrink every
 * ratio towards 1), the draft model catching up after steps without a draft, timing noise.
 *
 * Each arm runs a warm-up (one 8-token request, then one per stream) and `--rounds` rounds on one
 * server (one load, as a server keeps its measurements); an arm's figure is the median of its
 * rounds' tokens per second. Intervals: 95% percentile bootstrap over prompts (each resample draws
 * the P prompts with replacement and replays every arm on them), auto against the fixed γ that is
 * best on the recorded prompts.
 *
 *   npx tsx bench/gammaAutoReplay.ts [--case family|twin-0.1b] [--streams 1,4,16,32] [--gammas 0,2,4,8,auto]
 *       [--max-tokens 128] [--requests 2] [--rounds 7] [--resamples 200] [--overhead MS] [--rebuild MS] [--json FILE]
 *
 * --overhead and --rebuild replace the recorded bookkeeping per sequence-step and the fitted cost of a
 * change of shape (for sensitivity: a rebuild measured on a busy machine is mostly its neighbours).
 */
import {readFileSync, writeFileSync} from "node:fs";
import {dirname, join, resolve} from "node:path";
import {fileURLToPath} from "node:url";
import {parseArgs} from "node:util";
import type {BatchStatistics} from "../src/backend/ModelBackend.js";
import {AdaptiveDraftLength} from "../src/engine/AdaptiveDraftLength.js";
import {parseGammaSpec, type GammaSetting} from "../src/engine/gammaSpec.js";
import {MeasuredStepTimes} from "../src/engine/MeasuredStepTimes.js";
import {SpeculationLoad} from "../src/engine/SpeculationLoad.js";
import {Random} from "../src/random/Random.js";
import {type CostPoint, StepCostModel} from "./gammaAutoCostModel.js";
import {formatInterval, goalVerdict, median, type SpeedInterval} from "./speedIntervals.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

interface Trace {
    readonly promptTokens: number;
    readonly text: readonly number[];
    readonly match: readonly number[];
    readonly engineOverheadMilliseconds?: {readonly plain: number; readonly speculative: number};
}

interface Recording {
    readonly case: string;
    readonly machine: unknown;
    readonly date: string;
    readonly loadAverage: readonly number[];
    readonly traces: readonly Trace[];
    readonly costs: Record<string, {target: CostPoint[]; draft: CostPoint[]}>;
}

/** Costs of one level (number of batched sequences): target and draft step models and the per-sequence bookkeeping. */
interface LevelCosts {
    readonly target: StepCostModel;
    readonly draft: StepCostModel;
    readonly overhead: number;
}

/** One live request of the replay. */
interface Live {
    readonly trace: Trace;
    /** Tokens emitted so far (the first comes from the prompt step). */
    emitted: number;
    readonly wanted: number;
    readonly auto: AdaptiveDraftLength | undefined;
    prefilled: boolean;
    length: number;
    draftMilliseconds: number;
}

export interface ReplayOptions {
    readonly streams: number;
    readonly requests: number;
    readonly maxTokens: number;
    readonly rounds: number;
}

/** What the auto arm chose over the timed rounds. */
export class ChoiceCounts {
    public steps = 0;
    public drafted = 0;
    public skipped = 0;
    public probes = 0;
    public rebuilds = 0;
    public targetMilliseconds = 0;
    public draftMilliseconds = 0;
    public overheadMilliseconds = 0;

    public get meanLength(): number {
        return this.drafted / Math.max(1, this.steps);
    }
}

/** Tokens per second of each round of one arm (one server: one load over warm-up and rounds). */
export function replayArm(
    setting: GammaSetting,
    traces: readonly Trace[],
    costs: LevelCosts,
    options: ReplayOptions,
    counts = new ChoiceCounts()
): number[] {
    let counting = false;
    // The simulated time: what the load's measured rates read as their clock.
    let now = 0;
    const load = new SpeculationLoad(undefined, new MeasuredStepTimes(true, () => now));
    const counters = {steps: 0, tokens: 0};
    const statistics = (): BatchStatistics => ({
        steps: counters.steps,
        tokens: counters.tokens,
        submissions: 0,
        largestStep: 0,
        gatherMilliseconds: 0,
        decodeMilliseconds: 0,
        deferredRemovals: 0
    });
    const autoOptions =
        setting.draftLength === "auto"
            ? {choose: true, maxLength: setting.maxGamma!, initialLength: setting.gamma, tokensPerPosition: 1, batchStatistics: statistics}
            : undefined;
    const run = (prompts: ReadonlyArray<readonly Trace[]>, wanted: number): number => {
        // prompts[client]: the traces that client sends, in order.
        const next = prompts.map(() => 0);
        const live = new Map<number, Live>();
        const start = (client: number): void => {
            if (next[client] >= prompts[client].length) return;
            const trace = prompts[client][next[client]++];
            live.set(client, {
                trace,
                emitted: 0,
                wanted: Math.min(wanted, trace.text.length),
                auto: autoOptions === undefined ? undefined : new AdaptiveDraftLength(load, autoOptions),
                prefilled: false,
                length: 0,
                draftMilliseconds: 0
            });
        };
        prompts.forEach((_traces, client) => start(client));
        let time = 0;
        let tokens = 0;
        while (live.size > 0) {
            const requests = [...live.values()];
            for (const request of requests) {
                request.length = 0;
                if (!request.prefilled) continue;
                const limit = request.wanted - request.emitted - 1;
                request.length = request.auto?.next(setting.gamma, limit) ?? Math.min(setting.gamma, limit);
                if (counting && limit > 0) {
                    counts.steps++;
                    counts.drafted += request.length;
                    if (request.auto?.choice.skipped === true) counts.skipped++;
                    if (request.auto?.choice.probe === true) counts.probes++;
                }
            }
            // Draft: one batched call per position, of the sequences still drafting.
            const longest = Math.max(0, ...requests.map((request) => request.length));
            let draftTime = 0;
            for (let position = 1; position <= longest; position++) {
                const drafting = requests.filter((request) => request.length >= position);
                draftTime += costs.draft.charge(drafting.map(() => 1));
                for (const request of drafting) request.draftMilliseconds = draftTime;
            }
            for (const request of requests) if (request.length === 0) request.draftMilliseconds = 0;
            const lengths = requests.map((request) => (request.prefilled ? 1 + request.length : request.trace.promptTokens));
            for (const request of requests) if (request.prefilled) request.auto?.beforeTarget();
            const targetTime = costs.target.charge(lengths);
            counters.steps++;
            counters.tokens += lengths.reduce((sum, length) => sum + length, 0);
            const stepTime = draftTime + targetTime + requests.length * costs.overhead;
            for (const request of requests) {
                if (!request.prefilled) {
                    request.prefilled = true;
                    request.emitted = 1;
                    tokens++;
                    continue;
                }
                const native = {decodeMilliseconds: targetTime, transferMilliseconds: 0, samplingMilliseconds: 0};
                request.auto?.afterTarget(1 + request.length, draftTime - request.draftMilliseconds + targetTime, native);
                const accepted = agreement(request.trace, request.emitted, request.length);
                const emitted = Math.min(accepted + 1, request.wanted - request.emitted);
                request.auto?.observe({
                    proposed: request.length,
                    accepted,
                    draftMilliseconds: request.draftMilliseconds,
                    stepMilliseconds: stepTime
                });
                request.emitted += emitted;
                tokens += emitted;
            }
            time += stepTime;
            now += stepTime;
            if (counting) {
                counts.targetMilliseconds += targetTime;
                counts.draftMilliseconds += draftTime;
                counts.overheadMilliseconds += requests.length * costs.overhead;
            }
            for (const [client, request] of live)
                if (request.emitted >= request.wanted) {
                    request.auto?.dispose();
                    live.delete(client);
                    start(client);
                }
        }
        return (1000 * tokens) / time;
    };
    // Warm-up as bench/serveLoad.ts: one request alone, then one per stream, 8 tokens each.
    run([[traces[0]]], 8);
    run(
        Array.from({length: options.streams}, (_v, client) => [traces[client % traces.length]]),
        8
    );
    const rounds: number[] = [];
    counting = true;
    for (let round = 0; round < options.rounds; round++)
        rounds.push(
            run(
                Array.from({length: options.streams}, (_v, client) =>
                    Array.from({length: options.requests}, (_w, request) => traces[(client * options.requests + request) % traces.length])
                ),
                options.maxTokens
            )
        );
    return rounds;
}

/** Draft positions accepted from a draft of `length` tokens after `emitted` tokens: the run of agreement, capped. */
function agreement(trace: Trace, emitted: number, length: number): number {
    let accepted = 0;
    while (accepted < length && emitted + accepted < trace.match.length && trace.match[emitted + accepted] === 1) accepted++;
    return accepted;
}

export function levelCosts(recording: Recording, streams: number, overhead: number | undefined, rebuild?: number): LevelCosts {
    const measured = recording.costs[String(streams)];
    if (measured === undefined)
        throw new Error(`the recording has no step costs at ${streams} sequences (it has ${Object.keys(recording.costs).join(", ")})`);
    const unified = streams <= 4;
    const recorded = recording.traces.flatMap((trace) =>
        trace.engineOverheadMilliseconds === undefined
            ? []
            : [trace.engineOverheadMilliseconds.plain, trace.engineOverheadMilliseconds.speculative]
    );
    const target = StepCostModel.fit(measured.target, unified);
    return {
        target: rebuild === undefined ? target : new StepCostModel(target.pass, unified, rebuild),
        draft: StepCostModel.fit(measured.draft, unified),
        overhead: overhead ?? (recorded.length > 0 ? median(recorded) : 0)
    };
}

function percentile(sorted: readonly number[], share: number): number {
    return sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(share * (sorted.length - 1))))];
}

// ---------------------------------------------------------------------------------------------

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    const {values} = parseArgs({
        options: {
            case: {type: "string", default: "family"},
            recording: {type: "string"},
            streams: {type: "string", default: "1,4,16,32"},
            gammas: {type: "string", default: "0,2,4,8,auto"},
            "max-tokens": {type: "string", default: "128"},
            requests: {type: "string", default: "2"},
            rounds: {type: "string", default: "7"},
            resamples: {type: "string", default: "200"},
            overhead: {type: "string"},
            rebuild: {type: "string"},
            json: {type: "string"}
        }
    });
    const recordingPath = resolve(values.recording ?? join(root, `bench/data/gamma-auto/${values.case}.json`));
    const recording = JSON.parse(readFileSync(recordingPath, "utf8")) as Recording;
    const settings = values.gammas!.split(",").map((entry) => ({label: `γ=${entry}`, setting: parseGammaSpec(entry, "--gammas")}));
    const options = {requests: Number(values.requests), maxTokens: Number(values["max-tokens"]), rounds: Number(values.rounds)};
    const resamples = Number(values.resamples);
    const overhead = values.overhead === undefined ? undefined : Number(values.overhead);
    const rebuild = values.rebuild === undefined ? undefined : Number(values.rebuild);
    const random = new Random(1);
    const draws = Array.from({length: resamples}, () =>
        recording.traces.map(() => recording.traces[random.nextUint32() % recording.traces.length])
    );
    const log = (line: string): void => void process.stderr.write(`${line}\n`);
    const rows: object[] = [];
    const fixed = settings.filter((arm) => arm.setting.draftLength !== "auto");
    const auto = settings.find((arm) => arm.setting.draftLength === "auto");
    console.log(
        `| streams | ${settings.map((arm) => `${arm.label} tok/s`).join(" | ")} | best fixed | auto ÷ best fixed [95%] | auto ≥ 0.97× |`
    );
    console.log(`|---|${settings.map(() => "---|").join("")}---|---|---|`);
    for (const streams of values.streams!.split(",").map(Number)) {
        const costs = levelCosts(recording, streams, overhead, rebuild);
        log(
            `${streams} streams: target pass ${costs.target.pass.base.toFixed(3)} + ${costs.target.pass.perToken.toFixed(4)}/token + ${costs.target.pass.perSequence.toFixed(4)}/sequence ms (median error ${(100 * costs.target.medianError(recording.costs[String(streams)].target)).toFixed(0)}%), rebuild ${costs.target.rebuild.toFixed(3)} ms; draft ${costs.draft.pass.base.toFixed(3)} + ${costs.draft.pass.perSequence.toFixed(4)}/sequence; overhead ${costs.overhead.toFixed(3)} ms per sequence-step`
        );
        const rate = (setting: GammaSetting, traces: readonly Trace[], counts?: ChoiceCounts): number =>
            median(replayArm(setting, traces, levelCosts(recording, streams, overhead, rebuild), {streams, ...options}, counts));
        const point = settings.map((arm) => {
            const counts = new ChoiceCounts();
            const value = rate(arm.setting, recording.traces, counts);
            const total = counts.targetMilliseconds + counts.draftMilliseconds + counts.overheadMilliseconds;
            log(
                `  ${arm.label}: ${value.toFixed(1)} tok/s, mean draft ${counts.meanLength.toFixed(2)}, skipped ${((100 * counts.skipped) / Math.max(1, counts.steps)).toFixed(1)}%, probes ${((100 * counts.probes) / Math.max(1, counts.steps)).toFixed(1)}%; time: target ${((100 * counts.targetMilliseconds) / total).toFixed(0)}%, draft ${((100 * counts.draftMilliseconds) / total).toFixed(0)}%, bookkeeping ${((100 * counts.overheadMilliseconds) / total).toFixed(0)}%`
            );
            return value;
        });
        const bestIndex =
            fixed.length === 0
                ? -1
                : point.indexOf(Math.max(...point.filter((_r, index) => settings[index].setting.draftLength !== "auto")));
        let interval: SpeedInterval = {estimate: Number.NaN, low: Number.NaN, high: Number.NaN};
        if (auto !== undefined && bestIndex >= 0) {
            const autoIndex = settings.indexOf(auto);
            const ratios = draws
                .map((traces) => rate(auto.setting, traces) / rate(settings[bestIndex].setting, traces))
                .sort((a, b) => a - b);
            interval =
                ratios.length === 0
                    ? {estimate: point[autoIndex] / point[bestIndex], low: Number.NaN, high: Number.NaN}
                    : {estimate: point[autoIndex] / point[bestIndex], low: percentile(ratios, 0.025), high: percentile(ratios, 0.975)};
        }
        const verdict = goalVerdict(interval, 0.97) ?? "–";
        const ratio = Number.isFinite(interval.low) ? formatInterval(interval, 3) : interval.estimate.toFixed(3);
        console.log(
            `| ${streams} | ${point.map((value) => value.toFixed(1)).join(" | ")} | ${bestIndex >= 0 ? settings[bestIndex].label : "–"} | ${ratio} | ${verdict} |`
        );
        rows.push({streams, arms: settings.map((arm, index) => ({arm: arm.label, tokensPerSecond: point[index]})), interval, verdict});
    }
    if (values.json !== undefined)
        writeFileSync(values.json, `${JSON.stringify({recording: recordingPath, options, resamples, overhead, rebuild, rows}, null, 1)}\n`);
}
