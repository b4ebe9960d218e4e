import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {createProgram} from "../cli/createProgram.js";
import type {InfoReport} from "../cli/commands/infoCommand.js";
import {processLogits} from "../distributions/processLogits.js";
import {generate} from "../engine/generate.js";
import {writeRandomLlamaPair} from "../gguf/randomLlamaModel.js";
import {Random} from "../random/Random.js";
import {chiSquareGoodnessOfFit} from "../statistics/chiSquareGoodnessOfFit.js";
import {gpuDevices} from "./gpuChoice.js";
import {nativeAddon, nativeAddonPathOf, nativeBackendAvailable, nativeBuildPresent} from "./nativeAddon.js";
import {NativeBackend} from "./NativeBackend.js";
import {describeBackendContract, expectSameComputation, sameComputationTolerance} from "./testing/describeBackendContract.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/**
 * The native backend on its Vulkan build (`npm run build:native -- --gpu vulkan`), every layer
 * offloaded. Runs where that build exists and finds a Vulkan device, e.g. Mesa's software device
 * llvmpipe (`apt-get install mesa-vulkan-drivers libvulkan1`). Elsewhere it is skipped, with the
 * reason printed; under CI, which installs both (.ci/run), it fails instead.
 *
 * ggml's Vulkan backend ignores CPU-type devices such as llvmpipe unless GGML_VK_VISIBLE_DEVICES names
 * them, so the suite names device 0 when the variable is unset (before the addon loads its backends).
 */
process.env.GGML_VK_VISIBLE_DEVICES ??= "0";

const inCi = process.env.CI === "true" || process.env.CI === "1";
/** F16 roundings a GPU row may differ by from the same row computed otherwise (sameComputationTolerance). */
const gpuRoundings = 4;
const familyTarget = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const familyDraft = new URL("../../models/draft/model.gguf", import.meta.url).pathname;
const greedy = {temperature: 0, topK: 0, topP: 1, minP: 0};

/** Why the suite cannot run here; null when it can. */
function unavailableReason(): string | null {
    if (!nativeBuildPresent("vulkan")) return `${nativeAddonPathOf("vulkan")} is not built (npx specgate build --gpu vulkan)`;
    if (!nativeBackendAvailable("vulkan")) {
        try {
            nativeAddon("vulkan");
        } catch (error) {
            return (error as Error).message;
        }
    }
    if (gpuDevices("vulkan").length === 0)
        return "the Vulkan addon finds no Vulkan device (install mesa-vulkan-drivers and libvulkan1 for llvmpipe)";
    return null;
}

const reason = unavailableReason();
if (reason !== null && !inCi) console.warn(`skipping the Vulkan GPU suite: ${reason}`);
const skip = reason !== null && !inCi;

describe("the Vulkan build of the native addon", () => {
    it.skipIf(skip)("is built and finds a Vulkan device", () => {
        expect(reason).toBeNull();
    });
});

describe.skipIf(skip)("NativeBackend on Vulkan: the backend contract", () => {
    describeBackendContract("NativeBackend, gpu vulkan", (path, options) => NativeBackend.load(path, {...options, gpu: "vulkan"}), {
        roundings: gpuRoundings
    });
});

describe.skipIf(skip)("NativeBackend on Vulkan, the family pair", () => {
    let target: NativeBackend;
    let draft: NativeBackend;
    beforeAll(async () => {
        target = await NativeBackend.load(familyTarget, {gpu: "vulkan"});
        draft = await NativeBackend.load(familyDraft, {gpu: "vulkan"});
    });
    afterAll(async () => {
        await draft?.dispose();
        await target?.dispose();
    });

    it("offloads to the Vulkan device and computes the CPU addon's logits", async () => {
        expect(target.nativeBuild).toBe("vulkan");
        expect(target.device).toMatch(/^Vulkan\d/);
        const cpu = await NativeBackend.load(familyTarget, {gpu: "off"});
        try {
            expect(cpu.device).toBe("CPU");
            const tokens = [target.bosToken!, ...target.tokenize("Once upon a time, a kettle")];
            const positions = [3, tokens.length - 1];
            const onGpu = await (await target.createSequence()).evaluate(tokens, {positions});
            const onCpu = await (await cpu.createSequence()).evaluate(tokens, {positions});
            for (let index = 0; index < positions.length; index++) expectSameComputation(onGpu[index], onCpu[index], gpuRoundings);
        } finally {
            await cpu.dispose();
        }
    });

    it("copies whole rows by default (device token selection is off unless asked for)", async () => {
        const result = await generate(target, undefined, "Once upon a time", {gamma: 0, sampling: greedy, maxTokens: 8, ignoreEos: true});
        expect(target.tokenSelection).toBe("host");
        expect(result.telemetry.deviceToHostBytesPerToken).toBe(4 * target.vocabularySize);
    });

    it("keeps the model on the CPU with gpuLayers 0", async () => {
        const onCpu = await NativeBackend.load(familyTarget, {gpu: "vulkan", gpuLayers: 0});
        try {
            expect(onCpu.nativeBuild).toBe("vulkan");
            expect(onCpu.device).toBe("CPU");
        } finally {
            await onCpu.dispose();
        }
    });

    it.each([
        ["strict γ = 4", {policy: {kind: "strict"}, gamma: 4}],
        ["a 2x4 token tree", {tree: {width: 2, depth: 4}}]
    ] as const)("%s at temperature 0 equals target-only decoding, or splits only at a near-tie", async (_name, speculative) => {
        let identical = 0;
        const prompts = ["Once upon a time", "Steep the tea", "def f(x):"];
        for (const prompt of prompts) {
            const options = {sampling: {temperature: 0}, maxTokens: 32};
            const targetOnly = await generate(target, undefined, prompt, options);
            const strict = await generate(target, draft, prompt, {...options, ...speculative});
            const split = targetOnly.tokens.findIndex((token, index) => token !== strict.tokens[index]);
            if (split < 0 && targetOnly.tokens.length === strict.tokens.length) {
                identical++;
                continue;
            }
            // A verification batch rounds differently from a lone decode: a split needs the target's
            // top two logits within that rounding where the outputs part.
            const sequence = await target.createSequence();
            const [row] = await sequence.evaluate([target.bosToken!, ...target.tokenize(prompt), ...targetOnly.tokens.slice(0, split)]);
            await sequence.dispose();
            const sorted = Float64Array.from(row).sort();
            expect(sorted[sorted.length - 1] - sorted[sorted.length - 2]).toBeLessThanOrEqual(
                2 * sameComputationTolerance(row, gpuRoundings)
            );
        }
        expect(identical).toBeGreaterThanOrEqual(prompts.length - 1);
    });

    it("rows of sequences batched on a shared context equal lone rows", async () => {
        const batched = await NativeBackend.load(familyTarget, {gpu: "vulkan", batchedSequences: 4});
        try {
            const prompts = ["Once upon a time", "Steep the tea for three minutes", "Dear Sam,", "def f(x): return"];
            const lone: Float64Array[][] = [];
            for (const prompt of prompts) {
                const sequence = await target.createSequence();
                const tokens = [target.bosToken!, ...target.tokenize(prompt)];
                lone.push(await sequence.evaluate(tokens, {positions: [0, tokens.length - 1]}));
                await sequence.dispose();
            }
            const together = await Promise.all(
                prompts.map(async (prompt) => {
                    const sequence = await batched.createSequence();
                    const tokens = [batched.bosToken!, ...batched.tokenize(prompt)];
                    const rows = await sequence.evaluate(tokens, {positions: [0, tokens.length - 1]});
                    await sequence.dispose();
                    return rows;
                })
            );
            expect(batched.batchStatistics!.steps).toBeLessThan(prompts.length);
            together.forEach((rows, index) =>
                rows.forEach((row, position) => expectSameComputation(row, lone[index][position], gpuRoundings))
            );
        } finally {
            await batched.dispose();
        }
    });
});

describe.skipIf(skip)("NativeBackend on Vulkan with device token selection, the family pair", () => {
    // The Vulkan build keeps one argmax chain per sequence for a context's life (native/src/DeviceSelection.h):
    // attaching one after a decode crashed Mesa's llvmpipe.
    let target: NativeBackend;
    let draft: NativeBackend;
    let cpuTarget: NativeBackend;
    let cpuDraft: NativeBackend;
    beforeAll(async () => {
        target = await NativeBackend.load(familyTarget, {gpu: "vulkan", deviceSelection: true});
        draft = await NativeBackend.load(familyDraft, {gpu: "vulkan", deviceSelection: true});
        cpuTarget = await NativeBackend.load(familyTarget, {gpu: "off", deviceSelection: false});
        cpuDraft = await NativeBackend.load(familyDraft, {gpu: "off", deviceSelection: false});
    });
    afterAll(async () => {
        for (const backend of [cpuDraft, cpuTarget, draft, target]) await backend?.dispose();
    });

    it.each([
        ["target-only", false, {gamma: 0}],
        ["strict γ = 4", true, {policy: {kind: "strict"}, gamma: 4}]
    ] as const)("%s at temperature 0 gives the CPU addon's tokens, at most 64 bytes per emitted token", async (_name, usesDraft, arm) => {
        expect(target.tokenSelection).toBe("device");
        for (const prompt of ["Once upon a time", "Steep the tea", "def f(x):"]) {
            const options = {...arm, sampling: greedy, maxTokens: 24, ignoreEos: true};
            const onGpu = await generate(target, usesDraft ? draft : undefined, prompt, options);
            const onCpu = await generate(cpuTarget, usesDraft ? cpuDraft : undefined, prompt, options);
            expect(onGpu.tokens).toEqual(onCpu.tokens);
            expect(onGpu.telemetry.deviceToHostBytesPerToken!).toBeLessThanOrEqual(64);
        }
    });

    it("rows asked of a context that selects on the device are the rows computed without it", async () => {
        const plain = await NativeBackend.load(familyTarget, {gpu: "vulkan", deviceSelection: false});
        try {
            const tokens = [target.bosToken!, ...target.tokenize("Once upon a time, a kettle")];
            const positions = [0, 3, tokens.length - 1];
            // An argmax step first, so the rows come after the context has decoded with its chain selecting.
            await generate(target, undefined, "Dear Sam,", {gamma: 0, sampling: greedy, maxTokens: 4, ignoreEos: true});
            const selecting = await target.createSequence();
            const withSelection = await selecting.evaluate(tokens, {positions});
            await selecting.dispose();
            const without = await (await plain.createSequence()).evaluate(tokens, {positions});
            withSelection.forEach((row, index) => expectSameComputation(row, without[index], gpuRoundings));
        } finally {
            await plain.dispose();
        }
    });

    it("survives several sequences on a shared context with multi-row decodes, ids and rows mixed, sequences made and dropped", async () => {
        // The shape that crashed llvmpipe when chains were attached and detached as the rows asked changed.
        const sharedTarget = await NativeBackend.load(familyTarget, {gpu: "vulkan", deviceSelection: true, batchedSequences: 4});
        const sharedDraft = await NativeBackend.load(familyDraft, {gpu: "vulkan", deviceSelection: true, batchedSequences: 4});
        try {
            const prompts = ["Once upon a time", "Steep the tea", "def f(x):", "Dear Sam,"];
            const strict = {policy: {kind: "strict"}, gamma: 4, maxTokens: 20, ignoreEos: true} as const;
            const alone = await Promise.all(prompts.map((prompt) => generate(target, draft, prompt, {...strict, sampling: greedy})));
            for (let round = 0; round < 3; round++) {
                const results = await Promise.all(
                    prompts.map((prompt, index) =>
                        generate(sharedTarget, sharedDraft, prompt, {
                            ...strict,
                            sampling: index % 2 === 0 ? greedy : {temperature: 1},
                            seed: round
                        })
                    )
                );
                results.forEach((result, index) => {
                    expect(result.tokens).toHaveLength(20);
                    if (index % 2 === 0) expect(result.tokens).toEqual(alone[index].tokens);
                });
            }
            expect(sharedTarget.batchStatistics!.steps).toBeGreaterThan(0);
        } finally {
            await sharedDraft.dispose();
            await sharedTarget.dispose();
        }
    });
});

describe.skipIf(skip)("NativeBackend on Vulkan with device token selection, a random-weights pair", () => {
    // Random weights give flat next-token distributions, where a sampler that drew from the wrong
    // distribution shows in a few hundred tokens (the family target is too sure of most tokens).
    let directory: string;
    let target: NativeBackend;
    let draft: NativeBackend;
    beforeAll(async () => {
        directory = await mkdtemp(join(tmpdir(), "specgate-gpu-"));
        const pair = await writeRandomLlamaPair({directory, seed: 11});
        target = await NativeBackend.load(pair.targetPath, {gpu: "vulkan", deviceSelection: true});
        draft = await NativeBackend.load(pair.draftPath, {gpu: "vulkan", deviceSelection: true});
    });
    afterAll(async () => {
        await draft?.dispose();
        await target?.dispose();
        await rm(directory, {recursive: true, force: true});
    });

    it.each([
        ["target-only", {gamma: 0}],
        ["strict γ = 4", {policy: {kind: "strict"}, gamma: 4}],
        ["block γ = 4", {policy: {kind: "block"}, gamma: 4}],
        ["a 2x3 token tree", {tree: {width: 2, depth: 3}}]
    ] as const)(
        "at temperature 1, the tokens of %s follow the target's distributions (χ² of randomized PIT values, ≥ 400 tokens)",
        async (_name, speculative) => {
            // Each emitted token x_t is a draw from the target's distribution p_t given the tokens before
            // it. With the ids ordered by falling p_t, u_t = P_t(ids before x_t) + U·p_t(x_t) (U uniform) is
            // then uniform on [0, 1) and independent of the earlier u: ten equal bins of u are a χ² test
            // with 9 degrees of freedom. p_t comes from one batched evaluation of prompt and tokens.
            const bins = new Float64Array(10);
            const random = new Random(17);
            let seed = 0;
            let count = 0;
            while (count < 400) {
                const prompt = [target.bosToken!, ...target.tokenize(["Once upon a time", "The kettle", "Dear Sam,"][seed % 3])];
                const result = await generate(target, "gamma" in speculative && speculative.gamma === 0 ? undefined : draft, prompt, {
                    ...speculative,
                    maxTokens: 100,
                    seed: seed++
                });
                // The end-of-generation token is drawn like any other but not emitted: count it too.
                const drawn = result.finishReason === "eos" ? [...result.tokens, target.eosToken!] : result.tokens;
                const positions = drawn.map((_, index) => prompt.length - 1 + index);
                const sequence = await target.createSequence();
                const rows = await sequence.evaluate([...prompt, ...drawn].slice(0, -1), {positions});
                await sequence.dispose();
                rows.forEach((row, index) => {
                    const probabilities = processLogits(row);
                    const token = drawn[index];
                    const chance = probabilities[token];
                    let before = 0;
                    probabilities.forEach((probability, id) => {
                        if (probability > chance || (probability === chance && id < token)) before += probability;
                    });
                    bins[Math.min(9, Math.floor((before + random.nextDouble() * chance) * 10))]++;
                });
                count += drawn.length;
            }
            const test = chiSquareGoodnessOfFit(bins, new Float64Array(10).fill(0.1));
            expect(test.pValue).toBeGreaterThan(0.001);
        }
    );
});

describe.skipIf(skip)("specgate info --json", () => {
    it("lists the Vulkan build and its device", async () => {
        const written: string[] = [];
        const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
            written.push(String(chunk));
            return true;
        });
        try {
            await createProgram().parseAsync(["node", "specgate", "info", "--json"]);
        } finally {
            spy.mockRestore();
        }
        const report = JSON.parse(written.join("")) as InfoReport;
        const vulkan = report.builds.find((build) => build.build === "vulkan")!;
        expect(vulkan.present).toBe(true);
        expect(vulkan.info!.backends).toContain("Vulkan");
        const devices = vulkan.info!.devices.filter((device) => device.backend === "Vulkan");
        expect(devices.length).toBeGreaterThan(0);
        // CI computes on Mesa's software device; elsewhere any Vulkan device will do.
        if (inCi) expect(devices.map((device) => device.description).join()).toMatch(/llvmpipe/);
        expect(report.auto.build).not.toBe("cpu");
        expect(report.versions.llamaCppRelease).not.toBeNull();
        expect(report.builds.find((build) => build.build === "cpu")!.info!.devices.map((device) => device.type)).toEqual(["cpu"]);
    });
});
