import {mkdtempSync, rmSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import type {NativeEagle3HeadHandle} from "./Eagle3HeadHandle.js";
import {
    type NativeAddon,
    type NativeContextHandle,
    type NativeModelHandle,
    NativeOutputMode,
    nativeAddon,
    nativeBackendAvailable
} from "./nativeAddon.js";
import {writeEagle3TestHead} from "./testing/eagle3TestHeads.js";

vi.setConfig(modelTestTimeouts);

/**
 * A head group's slots draft what heads of their own draft for the same target sequences: the same
 * greedy ids, and from the same uniforms the same sampled tokens with their sampler rows and logits
 * (to the last bits, which a batch's kernels may change), through catch-ups of different lengths per
 * slot (a prompt, verifications that kept 0 to 3 tokens).
 */
const familyTarget = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const layers = Int32Array.from([1, 2, 3]);
const directory = mkdtempSync(join(tmpdir(), "specgate-eagle3-group-"));
const headPath = join(directory, "head.gguf");
afterAll(() => rmSync(directory, {recursive: true, force: true}));

const streams = 4;
const gamma = 4;

describe.runIf(nativeBackendAvailable("cpu"))("an EAGLE-3 head group against heads of their own", () => {
    let addon: NativeAddon;
    let target: NativeModelHandle;
    let head: NativeModelHandle;
    let context: NativeContextHandle;

    beforeAll(async () => {
        await writeEagle3TestHead(headPath, familyTarget, {seed: 11});
        addon = nativeAddon("cpu");
        target = new addon.NativeModel(familyTarget);
        head = new addon.NativeModel(headPath);
        context = new addon.NativeContext(target, {
            contextSize: 128,
            sequences: streams,
            batchSize: 128 * streams,
            threads: 1,
            captureLayers: layers
        });
    });
    afterAll(() => {
        context?.dispose();
        head?.dispose();
        target?.dispose();
    });

    /** Decodes `tokens` into `sequence` from `start`, as a target step does (the tap keeps their rows). */
    const decode = (sequence: number, tokens: number[], start: number) =>
        context.decode(
            Int32Array.from(tokens),
            new Int32Array(tokens.length).fill(sequence),
            Int32Array.from(tokens, (_token, index) => start + index),
            [{outputs: new Int32Array(0), mode: NativeOutputMode.None}]
        );

    it.each([false, true])("sampled drafts %s: every slot's draft equals its own head's, step after step", async (sampled) => {
        const group = new addon.Eagle3HeadGroup(head, context, {contextSize: 128, threads: 1, slots: streams});
        const own: NativeEagle3HeadHandle[] = [];
        try {
            const histories = Array.from({length: streams}, (_value, sequence) =>
                Array.from({length: 12 + 5 * sequence}, (_token, index) => (3 + 17 * index + 29 * sequence) % 200)
            );
            for (const [sequence, history] of histories.entries()) {
                context.removeTokens(sequence, 0, -1);
                await decode(sequence, history, 0);
                history.push(40 + sequence);
                own.push(new addon.Eagle3Head(head, context, sequence, {contextSize: 128, threads: 1}));
            }
            const slots = histories.map((_history, sequence) => group.open(sequence));
            const size = 200;
            const options = {sampling: {temperature: 2, topK: 0, topP: 1, minP: 0}, size, minConfidence: 0};
            for (let step = 0; step < 4; step++) {
                const uniforms = histories.map((_history, sequence) =>
                    Float64Array.from({length: gamma}, (_value, index) => ((step + 1) * 0.131 + sequence * 0.277 + index * 0.419) % 1)
                );
                const draw = () => ({
                    ids: new Int32Array(gamma),
                    probabilities: new Float64Array(gamma * size),
                    logits: new Float64Array(gamma * size)
                });
                const [together, apart] = [histories.map(draw), histories.map(draw)];
                const [greedyTogether, greedyApart] = [
                    histories.map(() => new Int32Array(gamma)),
                    histories.map(() => new Int32Array(gamma))
                ];
                await group.draft(
                    slots.map((slot, index) =>
                        sampled
                            ? {slot, history: Int32Array.from(histories[index]), uniforms: uniforms[index], options, ...together[index]}
                            : {slot, history: Int32Array.from(histories[index]), count: gamma, destination: greedyTogether[index]}
                    )
                );
                for (const [index, each] of own.entries()) {
                    const history = Int32Array.from(histories[index]);
                    const {ids, probabilities, logits} = apart[index];
                    await (sampled
                        ? each.drawDrafts(history, uniforms[index], options, ids, probabilities, logits)
                        : each.draft(history, gamma, greedyApart[index]));
                }
                // The same tokens; rows computed in a batch may differ from a lone decode's in the last bits.
                for (const [slot, each] of together.entries()) {
                    expect(each.ids).toEqual(apart[slot].ids);
                    for (const field of ["probabilities", "logits"] as const)
                        expect(Math.max(...each[field].map((value, index) => Math.abs(value - apart[slot][field][index])))).toBeLessThan(
                            1e-5
                        );
                }
                expect(greedyTogether).toEqual(greedyApart);
                // The target verifies: sequence s keeps s mod 4 of the drafts, then its own next token.
                for (const [sequence, history] of histories.entries()) {
                    const drafted = Array.from(sampled ? together[sequence].ids : greedyTogether[sequence]);
                    const kept = [history[history.length - 1], ...drafted.slice(0, (sequence + step) % 4)];
                    await decode(sequence, kept, history.length - 1);
                    history.push(...kept.slice(1), (50 + 7 * step + sequence) % 200);
                }
            }
        } finally {
            for (const each of own) each.dispose();
            group.dispose();
        }
    });
});
