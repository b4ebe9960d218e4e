/**
 * `--gamma auto` against fixed γ inside one process: what an auto server pays per step beside a γ = 0
 * server, without the noise of starting servers and sockets. Each arm is a `specgate serve` app
 * (createServeApp, its own target and draft loaded as `specgate serve` loads them: continuous batching
 * over --streams sequences, unified KV up to 4) driven in-process through `app.request` with the
 * requests `bench:serve` sends (streaming /v1/completions, T = 0, strict, greedy drafts, prompt i of
 * examples/family-prompts.jsonl). Rounds alternate the arms (A B, then B A, …) after a warm-up round
 * each, so the JIT and the machine's load fall on all alike; each round: --streams clients × --requests
 * requests of --max-tokens tokens; throughput = generated tokens ÷ the round's wall time. Printed per
 * arm: the median tok/s with its 95% bootstrap interval and its ratio to the first arm; the same for the
 * process's CPU time per generated token (every thread; on a machine shared with other work it moves
 * far less than wall time, and it is what an arm's overhead costs); what auto chose (mean draft
 * length, steps without a draft, probes); and, with continuous batching, the target's steps, sequences
 * per step and time spent gathering a step, and the draft model's steps.
 *
 *   npx tsx bench/gammaAutoOverhead.ts [--arms 0,auto] [--streams 1] [--requests 4] [--max-tokens 128] [--rounds 9]
 *   node --cpu-prof --import tsx bench/gammaAutoOverhead.ts --arms auto   # where an arm's time goes
 */
import {loadavg} from "node:os";
import {dirname, join, resolve} from "node:path";
import {fileURLToPath} from "node:url";
import {parseArgs} from "node:util";
import {loadModelBackend} from "../src/backend/loadModelBackend.js";
import type {ModelBackend} from "../src/backend/ModelBackend.js";
import {loadPrompts} from "../src/cli/loadPrompts.js";
import {parseGammaSpec} from "../src/engine/gammaSpec.js";
import {parseDrafterSpec} from "../src/engine/drafters/parseDrafterSpec.js";
import {createServeApp, type ServeApp} from "../src/serve/createServeApp.js";
import {log, sseData} from "./benchUtilities.js";
import {formatInterval, median, medianInterval, medianRatioInterval} from "./speedIntervals.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const {values} = parseArgs({
    options: {
        arms: {type: "string", default: "0,auto"},
        streams: {type: "string", default: "1"},
        requests: {type: "string", default: "4"},
        "max-tokens": {type: "string", default: "128"},
        rounds: {type: "string", default: "9"},
        target: {type: "string", default: join(root, "models/target/model.gguf")},
        draft: {type: "string", default: join(root, "models/draft/model.gguf")},
        threads: {type: "string", default: "1"},
        context: {type: "string", default: "512"}
    }
});
const gammas = values.arms!.split(",");
const streams = Number(values.streams);
const requests = Number(values.requests);
const maxTokens = Number(values["max-tokens"]);
const rounds = Number(values.rounds);
const prompts = (await loadPrompts(join(root, "examples/family-prompts.jsonl"))).slice(0, 16);

interface Arm {
    readonly gamma: string;
    readonly serve: ServeApp;
    readonly models: readonly ModelBackend[];
    readonly rates: number[];
    /** CPU milliseconds of this process (every thread) per generated token, each round: less moved by other processes than wall time. */
    readonly cpuPerToken: number[];
    readonly choices: {steps: number; drafted: number; skipped: number; probes: number};
    /** The target's and the draft's batch counters over the measured rounds: steps, submissions, gathering time. */
    readonly batches: {target: BatchCounts; draft: BatchCounts};
}

interface BatchCounts {
    steps: number;
    submissions: number;
    tokens: number;
    gatherMilliseconds: number;
}

/** A model's batch counters now (zeros without continuous batching). */
function countsOf(model: ModelBackend): BatchCounts {
    const stats = model.batchStatistics;
    return {
        steps: stats?.steps ?? 0,
        submissions: stats?.submissions ?? 0,
        tokens: stats?.tokens ?? 0,
        gatherMilliseconds: stats?.gatherMilliseconds ?? 0
    };
}

/** What `after` counted beyond `before`, added to `total`. */
function addCounts(total: BatchCounts, before: BatchCounts, after: BatchCounts): void {
    total.steps += after.steps - before.steps;
    total.submissions += after.submissions - before.submissions;
    total.tokens += after.tokens - before.tokens;
    total.gatherMilliseconds += after.gatherMilliseconds - before.gatherMilliseconds;
}

async function openArm(gamma: string): Promise<Arm> {
    const load = {
        threads: Number(values.threads),
        contextSize: Number(values.context),
        inlineBelowMilliseconds: 1,
        batchedSequences: streams,
        stepTokens: 512,
        unifiedKvCache: streams <= 4
    };
    const target = await loadModelBackend(values.target!, load);
    const draft = await loadModelBackend(values.draft!, load);
    const setting = parseGammaSpec(gamma, "--arms");
    const serve = createServeApp({
        target,
        draft,
        modelName: "bench",
        maxConcurrency: streams,
        maxQueue: 4 * streams + 16,
        speculative: {
            drafter: parseDrafterSpec("model"),
            policy: {kind: "strict"},
            gamma: setting.gamma,
            ...(setting.draftLength !== undefined ? {draftLength: setting.draftLength, maxGamma: setting.maxGamma} : {}),
            draftSampling: "greedy",
            minConfidence: 0
        },
        samplerDefaults: {temperature: 0, topK: 0, topP: 1, minP: 0}
    });
    const zero = (): BatchCounts => ({steps: 0, submissions: 0, tokens: 0, gatherMilliseconds: 0});
    return {
        gamma,
        serve,
        models: [target, draft],
        rates: [],
        cpuPerToken: [],
        choices: {steps: 0, drafted: 0, skipped: 0, probes: 0},
        batches: {target: zero(), draft: zero()}
    };
}

interface Speculative {
    readonly draft_lengths?: number[];
    readonly num_skipped_steps?: number;
    readonly num_probe_steps?: number;
}

/** One streamed completion: its generated tokens and its speculative summary. */
async function complete(arm: Arm, prompt: string): Promise<{tokens: number; speculative?: Speculative}> {
    const response = await arm.serve.app.request("/v1/completions", {
        method: "POST",
        headers: {"content-type": "application/json"},
        body: JSON.stringify({
            prompt,
            max_tokens: maxTokens,
            temperature: 0,
            top_p: 1,
            stream: true,
            stream_options: {include_usage: true, continuous_usage_stats: true}
        })
    });
    if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
    let tokens = 0;
    let speculative: Speculative | undefined;
    for await (const data of sseData(response.body!)) {
        if (data === "[DONE]") break;
        const chunk = JSON.parse(data) as {usage?: {completion_tokens: number}; speculative?: Speculative};
        if (chunk.usage !== undefined) tokens = chunk.usage.completion_tokens;
        if (chunk.speculative !== undefined) speculative = chunk.speculative;
    }
    return {tokens, speculative};
}

/** One round on an arm: every client's requests one after another; tok/s of the round. */
async function round(arm: Arm, record: boolean): Promise<number> {
    const [target, draft] = arm.models as [ModelBackend, ModelBackend];
    const before = {target: countsOf(target), draft: countsOf(draft)};
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    let tokens = 0;
    await Promise.all(
        Array.from({length: streams}, async (_value, client) => {
            for (let request = 0; request < requests; request++) {
                const result = await complete(arm, prompts[(client * requests + request) % prompts.length]!);
                tokens += result.tokens;
                const lengths = result.speculative?.draft_lengths;
                if (!record || lengths === undefined) continue;
                arm.choices.steps += lengths.reduce((sum, count) => sum + count, 0);
                arm.choices.drafted += lengths.reduce((sum, count, length) => sum + count * length, 0);
                arm.choices.skipped += result.speculative?.num_skipped_steps ?? 0;
                arm.choices.probes += result.speculative?.num_probe_steps ?? 0;
            }
        })
    );
    const rate = tokens / ((performance.now() - started) / 1000);
    const cpu = process.cpuUsage(cpuBefore);
    if (record) {
        arm.cpuPerToken.push((cpu.user + cpu.system) / 1000 / tokens);
        addCounts(arm.batches.target, before.target, countsOf(target));
        addCounts(arm.batches.draft, before.draft, countsOf(draft));
    }
    return rate;
}

const arms: Arm[] = [];
for (const gamma of gammas) arms.push(await openArm(gamma));
log(`arms γ=${gammas.join(", γ=")}, ${streams} stream(s) × ${requests} requests × ${maxTokens} tokens, ${rounds} rounds`);
for (const arm of arms) await round(arm, false);
const loads: number[] = [];
for (let index = 0; index < rounds; index++) {
    const order = index % 2 === 0 ? arms : [...arms].reverse();
    for (const arm of order) {
        const rate = await round(arm, true);
        arm.rates.push(rate);
        log(`γ=${arm.gamma} round ${index + 1}: ${rate.toFixed(1)} tok/s (load ${loadavg()[0]!.toFixed(2)})`);
    }
    loads.push(loadavg()[0]!);
}
const baseline = arms[0]!;
console.log(
    `${streams} stream(s) × ${requests} requests × ${maxTokens} tokens, ${rounds} rounds; load average ${Math.min(...loads).toFixed(2)}–${Math.max(...loads).toFixed(2)}`
);
console.log(
    `| arm | tok/s [95%] | ÷ γ=${baseline.gamma} [95%] | CPU µs/token [95%] | ÷ γ=${baseline.gamma} [95%] | mean draft length | steps without a draft | probes | target steps | sequences per target step | target gather ms | draft steps |`
);
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|");
for (const arm of arms) {
    const {steps, drafted, skipped, probes} = arm.choices;
    const share = (count: number): string => (steps > 0 ? `${((100 * count) / steps).toFixed(1)}%` : "–");
    console.log(
        `| γ=${arm.gamma} | ${formatInterval(medianInterval(arm.rates), 1)} | ${formatInterval(medianRatioInterval(arm.rates, baseline.rates), 3)} | ${formatInterval(medianInterval(arm.cpuPerToken.map((ms) => 1000 * ms)), 0)} | ${formatInterval(medianRatioInterval(arm.cpuPerToken, baseline.cpuPerToken), 3)} | ${steps > 0 ? (drafted / steps).toFixed(2) : "–"} | ${share(skipped)} | ${share(probes)} | ${batchColumns(arm.batches)} |`
    );
}
/** Target steps, sequences per target step, the target's gathering time, draft steps (blank without continuous batching). */
function batchColumns({target, draft}: Arm["batches"]): string {
    if (target.steps === 0) return "– | – | – | –";
    return `${target.steps} | ${(target.submissions / target.steps).toFixed(1)} | ${target.gatherMilliseconds.toFixed(0)} | ${draft.steps}`;
}
for (const arm of arms) {
    if (!arm.gamma.startsWith("auto")) continue;
    const load = arm.serve.state.speculationLoad;
    // The steps every stream drafting k = 0…8 would make.
    const sizes = Array.from({length: 9}, (_value, index) => streams * (index + 1));
    console.log(
        `γ=${arm.gamma}'s cost model at the end: target step of ${sizes.join(", ")} tokens ${sizes.map((size) => load.stepCost.predict(size).toFixed(3)).join(", ")} ms; ` +
            `drafting ${load.draftTime.toFixed(3)} ms/position, catch-up ${load.catchUpTime.toFixed(4)} ms/token, other ${load.overheadTime.toFixed(3)} ms/step; ` +
            `acceptance prior ${load.acceptancePrior.toFixed(3)}`
    );
}
console.log(`medians: ${arms.map((arm) => `γ=${arm.gamma} ${median(arm.rates).toFixed(1)}`).join(", ")}`);
for (const arm of arms) {
    await arm.serve.shutdown();
    for (const model of arm.models) await model.dispose();
}
