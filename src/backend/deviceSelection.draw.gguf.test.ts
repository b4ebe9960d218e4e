import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {processLogits} from "../distributions/processLogits.js";
import type {SamplingOptions} from "../distributions/SamplingOptions.js";
import {InvalidInputError} from "../errors.js";
import {Random} from "../random/Random.js";
import {chiSquareGoodnessOfFit} from "../statistics/chiSquareGoodnessOfFit.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {NativeBackend} from "./NativeBackend.js";
import type {NativeSequence} from "./NativeSequence.js";

vi.setConfig(modelTestTimeouts);

/**
 * Ids drawn inside the graph (NativeSequence.evaluateDrawn, native/src/DeviceDraw.h) on the CPU build,
 * with the shipped target: only the id leaves the graph (measured from what llama.cpp copied), the
 * draws follow the sampler row's law (χ²), and at temperature alone a uniform picks the token the
 * host's inverse-CDF rule picks, except within float32 rounding of a boundary.
 */
const targetPath = new URL("../../models/target/model.gguf", import.meta.url).pathname;
// A context whose next-token distribution is broad (11 ids hold 99.7% of it at T = 1).
const prompt = "x";

let device: NativeBackend;
let host: NativeBackend;
let context: number[];
/** Where the reads are made: in the decode graph, or on the host from a whole row (hostRows: the rows copied). */
const drawingSides = [
    {name: "on the device", backend: () => device, hostRows: 0},
    {name: "on the host", backend: () => host, hostRows: 1}
];

beforeAll(async () => {
    device = await NativeBackend.load(targetPath, {threads: 1, gpu: "off", deviceSelection: true});
    host = await NativeBackend.load(targetPath, {threads: 1, gpu: "off", deviceSelection: false});
    context = [device.bosToken!, ...device.tokenize(prompt)];
});
afterAll(async () => {
    await device.dispose();
    await host.dispose();
});

function sampling(input: Partial<SamplingOptions>): SamplingOptions {
    return {temperature: 1, topK: 0, topP: 1, minP: 0, ...input};
}

/** The context's last logit row, read on the host. */
async function lastRow(): Promise<Float64Array> {
    const sequence = await host.createSequence();
    try {
        return (await sequence.evaluate(context))[0]!;
    } finally {
        await sequence.dispose();
    }
}

/** `count` draws from the context's last row, each with the next uniform of `random`; counts per id. */
async function draws(sequence: NativeSequence, options: SamplingOptions, random: Random, count: number) {
    const observed = new Float64Array(device.vocabularySize);
    const ids: number[] = [];
    const uniforms: number[] = [];
    await sequence.evaluate(context.slice(0, -1), {positions: []});
    for (let draw = 0; draw < count; draw++) {
        const uniform = random.nextDouble();
        const {tokens, hostRows} = await sequence.evaluateDrawn([context.at(-1)!], options, [uniform]);
        expect(hostRows).toBe(0);
        observed[tokens[0]!]++;
        ids.push(tokens[0]!);
        uniforms.push(uniform);
        await sequence.rollback(1);
    }
    return {observed, ids, uniforms};
}

describe("ids drawn on the device", () => {
    it("copies 4 bytes per drawn row, as llama.cpp reports them", async () => {
        const sequence = await device.createSequence();
        try {
            await draws(sequence, sampling({}), new Random(1), 20);
            // The prompt's rows: none wanted; then 20 draws of one id each.
            expect(sequence.timings.deviceToHostBytes).toBe(20 * 4);
        } finally {
            await sequence.dispose();
        }
    });

    it.each([
        {name: "T = 1", options: sampling({})},
        {name: "T = 2, top-k 20, top-p 0.95, min-p 0.01", options: sampling({temperature: 2, topK: 20, topP: 0.95, minP: 0.01})}
    ])("$name: the draws follow the sampler row (χ², 2000 draws)", async ({options}) => {
        const expected = processLogits(await lastRow(), options);
        const sequence = await device.createSequence();
        try {
            const {observed} = await draws(sequence, options, new Random(17), 2000);
            const test = chiSquareGoodnessOfFit(observed, expected);
            expect(test.bins).toBeGreaterThan(5);
            expect(test.pValue).toBeGreaterThan(0.001);
        } finally {
            await sequence.dispose();
        }
    });

    it("at temperature alone picks the host's inverse-CDF token for the same uniform, but within float32 rounding of a boundary", async () => {
        const options = sampling({temperature: 0.8});
        const row = processLogits(await lastRow(), options);
        let total = 0;
        for (const probability of row) total += probability;
        const sequence = await device.createSequence();
        try {
            const {ids, uniforms} = await draws(sequence, options, new Random(5), 400);
            let nearBoundary = 0;
            for (const [index, uniform] of uniforms.entries()) {
                const target = uniform * total;
                let cumulative = 0;
                let hostId = -1;
                let distance = Infinity;
                for (let id = 0; id < row.length; id++) {
                    if (row[id]! <= 0) continue;
                    cumulative += row[id]!;
                    distance = Math.min(distance, Math.abs(cumulative - target));
                    if (hostId < 0 && target < cumulative) hostId = id;
                }
                if (distance < 1e-5) nearBoundary++;
                else expect(ids[index]).toBe(hostId);
            }
            expect(nearBoundary).toBeLessThan(10);
        } finally {
            await sequence.dispose();
        }
    });

    it("draws on the host from the copied row where the context does not select on the device, by the same rule", async () => {
        const options = sampling({temperature: 0.8});
        const row = processLogits(await lastRow(), options);
        const sequence = await host.createSequence();
        try {
            await sequence.evaluate(context.slice(0, -1), {positions: []});
            const before = sequence.timings.deviceToHostBytes!;
            const {tokens, hostRows} = await sequence.evaluateDrawn([context.at(-1)!], options, [0.5]);
            expect(hostRows).toBe(1);
            expect(sequence.timings.deviceToHostBytes! - before).toBe(4 * host.vocabularySize);
            let cumulative = 0;
            let expected = -1;
            for (let id = 0; id < row.length && expected < 0; id++) {
                cumulative += row[id]!;
                if (0.5 < cumulative) expected = id;
            }
            expect(tokens).toEqual([expected]);
        } finally {
            await sequence.dispose();
        }
    });

    it.each(drawingSides)(
        "verification rows $name: the drafted id's probability, and draws from the row without it (χ², 1500 draws)",
        async ({backend, hostRows}) => {
            const options = sampling({temperature: 1.5, topK: 30});
            const row = processLogits(await lastRow(), options);
            // The most likely id as the draft: the residual then differs most from the row.
            const drafted = row.indexOf(Math.max(...row));
            const residual = row.map((probability, id) => (id === drafted ? 0 : probability / (1 - row[drafted]!)));
            const sequence = await backend().createSequence();
            try {
                await sequence.evaluate(context.slice(0, -1), {positions: []});
                const random = new Random(23);
                const observed = new Float64Array(device.vocabularySize);
                for (let draw = 0; draw < 1500; draw++) {
                    const rows = await sequence.evaluateVerified([context.at(-1)!], options, [drafted], [random.nextDouble()]);
                    expect(rows.hostRows).toBe(hostRows);
                    expect(rows.draftedProbabilities[0]).toBeCloseTo(row[drafted]!, 5);
                    observed[rows.residualTokens[0]!]++;
                    await sequence.rollback(1);
                }
                expect(observed[drafted]).toBe(0);
                const test = chiSquareGoodnessOfFit(observed, residual);
                expect(test.bins).toBeGreaterThan(5);
                expect(test.pValue).toBeGreaterThan(0.001);
                // 4 bytes of id and 4 of probability per row on the device.
                if (hostRows === 0) expect(sequence.timings.deviceToHostBytes).toBe(1500 * 8);
            } finally {
                await sequence.dispose();
            }
        }
    );

    it("refuses uniforms outside [0, 1), one too few, and temperature 0, naming the field", async () => {
        const sequence = await device.createSequence();
        try {
            await expect(sequence.evaluateDrawn(context, sampling({}), [1])).rejects.toThrow(InvalidInputError);
            await expect(sequence.evaluateDrawn(context, sampling({}), [1])).rejects.toThrow(/uniforms.*outside \[0, 1\)/);
            await expect(sequence.evaluateDrawn(context, sampling({}), [])).rejects.toThrow(
                /uniforms.*one uniform per wanted position \(1\)/
            );
            await expect(sequence.evaluateDrawn(context, sampling({temperature: 0}), [0.5])).rejects.toThrow(/sampling\.temperature/);
            await expect(sequence.evaluateVerified(context, sampling({}), [device.vocabularySize], [0.5])).rejects.toThrow(
                /drafted.*neither -1 nor an id/
            );
            await expect(sequence.evaluateVerified(context, sampling({}), [], [0.5])).rejects.toThrow(
                /drafted.*one id per wanted position/
            );
            expect(sequence.tokens).toEqual([]);
        } finally {
            await sequence.dispose();
        }
    });
});

describe("a draft model's verification reads (native/src/DeviceResidual.h)", () => {
    // Top-k leaves 30 candidates, searched in one level; the whole vocabulary is searched by blocks of √V.
    it.each([
        {name: "on the device, top-k 30", backend: () => device, hostRows: 0, options: sampling({temperature: 1.5, topK: 30, minP: 0.001})},
        {name: "on the host, top-k 30", backend: () => host, hostRows: 1, options: sampling({temperature: 1.5, topK: 30, minP: 0.001})},
        {name: "on the device, T = 1.2 alone", backend: () => device, hostRows: 0, options: sampling({temperature: 1.2})},
        {name: "on the host, T = 1.2 alone", backend: () => host, hostRows: 1, options: sampling({temperature: 1.2})}
    ])(
        "$name: K draws per row follow the sampler row with their probabilities, beside the drafted id's (χ², 125 rows × 16)",
        async ({backend, hostRows, options}) => {
            const row = processLogits(await lastRow(), options);
            const drafted = row.indexOf(Math.max(...row));
            const width = 16;
            const sequence = await backend().createSequence();
            try {
                await sequence.evaluate(context.slice(0, -1), {positions: []});
                const before = sequence.timings.deviceToHostBytes!;
                const random = new Random(30);
                const observed = new Float64Array(device.vocabularySize);
                for (let read = 0; read < 125; read++) {
                    const uniforms = [Array.from({length: width}, () => random.nextDouble())];
                    const rows = await sequence.evaluateCandidates([context.at(-1)!], options, [drafted], uniforms);
                    expect(rows.hostRows).toBe(hostRows);
                    expect(rows.draftedProbabilities[0]).toBeCloseTo(row[drafted]!, 5);
                    expect(rows.candidates[0]).toHaveLength(width);
                    for (const [index, id] of rows.candidates[0]!.entries()) {
                        expect(rows.candidateProbabilities[0]![index]).toBeCloseTo(row[id]!, 5);
                        observed[id]++;
                    }
                    await sequence.rollback(1);
                }
                const test = chiSquareGoodnessOfFit(observed, row);
                expect(test.bins).toBeGreaterThan(5);
                expect(test.pValue).toBeGreaterThan(0.001);
                // The id, p(drafted) and K probabilities as floats, the K ids as the row's candidates: 8 + 8K bytes.
                if (hostRows === 0) expect(sequence.timings.deviceToHostBytes! - before).toBe(125 * (8 + 8 * width));
            } finally {
                await sequence.dispose();
            }
        }
    );

    it.each(drawingSides)(
        "$name: a drawn id with its probability (8 bytes), and a row's probabilities at given ids (4 + 4K bytes, 8 + 4K beside a draw)",
        async ({backend, hostRows}) => {
            const options = sampling({temperature: 0.9, topP: 0.95});
            const row = processLogits(await lastRow(), options);
            const sequence = await backend().createSequence();
            try {
                await sequence.evaluate(context.slice(0, -1), {positions: []});
                let before = sequence.timings.deviceToHostBytes!;
                const random = new Random(31);
                for (let draw = 0; draw < 50; draw++) {
                    const scored = await sequence.evaluateScored([context.at(-1)!], options, [random.nextDouble()]);
                    expect(scored.hostRows).toBe(hostRows);
                    expect(row[scored.tokens[0]!]).toBeGreaterThan(0);
                    expect(scored.probabilities[0]).toBeCloseTo(row[scored.tokens[0]!]!, 5);
                    await sequence.rollback(1);
                }
                if (hostRows === 0) expect(sequence.timings.deviceToHostBytes! - before).toBe(50 * 8);
                // Ids kept by top-p and dropped by it (probability 0), in any order.
                const kept = Array.from(row.keys()).filter((id) => row[id]! > 0);
                const dropped = Array.from(row.keys()).filter((id) => row[id] === 0);
                const ids = [kept[1]!, dropped[0]!, kept[0]!, dropped.at(-1)!];
                before = sequence.timings.deviceToHostBytes!;
                const gathered = await sequence.evaluateGathered([context.at(-1)!], options, [ids]);
                expect(gathered.hostRows).toBe(hostRows);
                for (const [index, id] of ids.entries()) expect(gathered.probabilities[0]![index]).toBeCloseTo(row[id]!, 5);
                if (hostRows === 0) expect(sequence.timings.deviceToHostBytes! - before).toBe(4 + 4 * ids.length);
                await sequence.rollback(1);
                // A draw with the row's probabilities at the same ids beside it (−1: none): 8 + 4K bytes.
                before = sequence.timings.deviceToHostBytes!;
                const scored = await sequence.evaluateScored([context.at(-1)!], options, [0.25], {gather: [[...ids, -1]]});
                expect(scored.hostRows).toBe(hostRows);
                expect(scored.probabilities[0]).toBeCloseTo(row[scored.tokens[0]!]!, 5);
                for (const [index, id] of [...ids, -1].entries()) expect(scored.gathered[0]![index]).toBeCloseTo(row[id] ?? 0, 5);
                if (hostRows === 0) expect(sequence.timings.deviceToHostBytes! - before).toBe(8 + 4 * (ids.length + 1));
            } finally {
                await sequence.dispose();
            }
        }
    );

    it("refuses candidate lists of unequal or too large a length, ids outside the vocabulary, and temperature 0", async () => {
        const sequence = await device.createSequence();
        try {
            const last = [context.at(-1)!];
            await expect(sequence.evaluateCandidates(last, sampling({}), [-1], [[0.5], [0.5]])).rejects.toThrow(/uniforms/);
            await expect(sequence.evaluateCandidates(last, sampling({}), [-1], [new Array(65).fill(0.5)])).rejects.toThrow(
                /uniforms.*one length in \[1, 64\]/
            );
            await expect(sequence.evaluateCandidates(last, sampling({}), [device.vocabularySize], [[0.5]])).rejects.toThrow(
                /drafted.*neither -1 nor an id/
            );
            await expect(sequence.evaluateGathered(last, sampling({}), [[-1]])).rejects.toThrow(/ids.*not an id of the vocabulary/);
            await expect(sequence.evaluateGathered(last, sampling({}), [[1], [2]])).rejects.toThrow(/ids.*one list per wanted position/);
            await expect(sequence.evaluateScored(last, sampling({temperature: 0}), [0.5])).rejects.toThrow(InvalidInputError);
            expect(sequence.tokens).toEqual([]);
        } finally {
            await sequence.dispose();
        }
    });
});
