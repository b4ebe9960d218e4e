/**
 * Token selection in the graph against the host, on the CPU build, for target-only decoding at T = 0
 * (argmax) and T = 1 (a draw), for strict verification of n-gram drafts at T = 1 and, given --draft,
 * of a draft model's tokens at T = 1 (sampled and greedy drafts) and, given --head, of an EAGLE-3
 * head's: the same models loaded with deviceSelection on and off, arms alternated one repetition at a
 * time in one process. Prints specgate's median tok/s per arm, the device ÷ host ratio [95% bootstrap
 * interval] and bytes copied out of the graphs per token (target and draft together, and the target's
 * alone).
 *
 *   npx tsx bench/deviceDrawBench.ts --target .specgate/device-fixtures/v152k/target.gguf \
 *       [--draft .specgate/device-fixtures/v152k/draft.gguf] [--head models/eagle3/model.gguf] [--arm "draft model"] \
 *       [--reps 7] [--tokens 64] [--threads 2]
 *
 * --arm runs only the arms whose name contains it.
 */
import {loadavg} from "node:os";
import {parseArgs} from "node:util";
import {loadModelBackend} from "../src/backend/loadModelBackend.js";
import type {ModelBackend} from "../src/backend/ModelBackend.js";
import {NativeBackend} from "../src/backend/NativeBackend.js";
import {generate} from "../src/engine/generate.js";
import type {GenerationOptionsInput} from "../src/engine/GenerationOptions.js";
import {formatInterval, median, medianRatioInterval} from "./speedIntervals.js";

const {values} = parseArgs({
    options: {
        target: {type: "string", default: "models/target/model.gguf"},
        draft: {type: "string"},
        head: {type: "string"},
        arm: {type: "string"},
        reps: {type: "string", default: "7"},
        tokens: {type: "string", default: "64"},
        threads: {type: "string", default: "2"}
    }
});
const reps = Number(values.reps);
const threads = Number(values.threads);
const prompt = "Once upon a time, the";
const arms: Array<{name: string; options: GenerationOptionsInput; usesDraft?: boolean; usesHead?: boolean}> = [
    {name: "target-only T = 0", options: {gamma: 0, sampling: {temperature: 0}}},
    {name: "target-only T = 1", options: {gamma: 0, sampling: {temperature: 1}}},
    {name: "strict γ = 4, n-gram drafts, T = 1", options: {drafter: "ngram:1:3", gamma: 4, sampling: {temperature: 1}}},
    {
        name: "block γ = 4, n-gram drafts, T = 1",
        options: {drafter: "ngram:1:3", gamma: 4, policy: {kind: "block"}, sampling: {temperature: 1}}
    },
    ...(values.draft === undefined
        ? []
        : [
              {name: "strict γ = 4, draft model, T = 1", options: {gamma: 4, sampling: {temperature: 1}}, usesDraft: true},
              {
                  name: "strict γ = 4, greedy draft model, T = 1",
                  options: {gamma: 4, draftSampling: "greedy" as const, sampling: {temperature: 1}},
                  usesDraft: true
              }
          ]),
    ...(values.head === undefined
        ? []
        : [
              {name: "strict γ = 4, EAGLE-3 head, T = 1", options: {gamma: 4, sampling: {temperature: 1}}, usesHead: true},
              {
                  name: "strict γ = 4, greedy EAGLE-3 head, T = 1",
                  options: {gamma: 4, draftSampling: "greedy" as const, sampling: {temperature: 1}},
                  usesHead: true
              }
          ])
];

const device = await NativeBackend.load(values.target, {threads, gpu: "off", deviceSelection: true});
const host = await NativeBackend.load(values.target, {threads, gpu: "off", deviceSelection: false});
const drafts =
    values.draft === undefined
        ? undefined
        : {
              device: await NativeBackend.load(values.draft, {threads, gpu: "off", deviceSelection: true}),
              host: await NativeBackend.load(values.draft, {threads, gpu: "off", deviceSelection: false})
          };
// One head drafts for either target: each generation opens its own head context on the target's sequence.
const head: ModelBackend | undefined =
    values.head === undefined ? undefined : await loadModelBackend(values.head, {backend: "native", threads});
process.stdout.write(
    `${values.target} (V = ${device.vocabularySize}), ${threads} threads, ${values.tokens} tokens, ${reps} repetitions, ` +
        `load average at start ${loadavg()[0].toFixed(2)}, ${new Date().toISOString()}\n\n` +
        "| arm | device tok/s | host tok/s | device ÷ host | bytes/token (device, host) | target bytes/token (device, host) |\n" +
        "|---|---|---|---|---|---|\n"
);
for (const arm of arms.filter((candidate) => values.arm === undefined || candidate.name.includes(values.arm))) {
    const speeds = {device: [] as number[], host: [] as number[]};
    const bytes = {device: 0, host: 0};
    const targetBytes = {device: 0, host: 0};
    for (let rep = 0; rep < reps; rep++) {
        for (const side of rep % 2 === 0 ? (["device", "host"] as const) : (["host", "device"] as const)) {
            const drafter = arm.usesHead === true ? head : arm.usesDraft === true ? drafts?.[side] : undefined;
            const result = await generate(side === "device" ? device : host, drafter, prompt, {
                ...arm.options,
                maxTokens: Number(values.tokens),
                ignoreEos: true,
                seed: rep
            });
            speeds[side].push(result.telemetry.emittedTokens / (result.telemetry.time.total / 1000));
            bytes[side] = result.telemetry.deviceToHostBytesPerToken ?? Number.NaN;
            targetBytes[side] = result.telemetry.deviceToHost.target / result.telemetry.emittedTokens;
        }
    }
    process.stdout.write(
        `| ${arm.name} | ${median(speeds.device).toFixed(1)} | ${median(speeds.host).toFixed(1)} | ` +
            `${formatInterval(medianRatioInterval(speeds.device, speeds.host), 3)} | ${bytes.device.toFixed(1)}, ${bytes.host.toFixed(0)} | ` +
            `${targetBytes.device.toFixed(1)}, ${targetBytes.host.toFixed(0)} |\n`
    );
}
process.stdout.write(`\nload average at end ${loadavg()[0].toFixed(2)}\n`);
await head?.dispose();
await drafts?.device.dispose();
await drafts?.host.dispose();
await device.dispose();
await host.dispose();
