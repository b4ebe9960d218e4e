import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {argmax} from "../distributions/argmax.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import type {BackendSequence} from "./ModelBackend.js";
import {NativeBackend} from "./NativeBackend.js";

vi.setConfig(modelTestTimeouts);

/**
 * Token trees on one unified KV cache: every node of a tree decoded in one call (or one depth per
 * call) gets the row a plain sequence gets after decoding the node's path itself, and keeping a path
 * leaves the sequence as if it had decoded that path: its next row is the plain one's.
 */
const familyTarget = new URL("../../models/target/model.gguf", import.meta.url).pathname;

/**
 *        0:a ── 1:b ── 3:d
 *   root ┤      └─ 2:c ── 4:e ── 6:g
 *        └ 5:f              └─ 7:h
 */
const tokens = [20, 31, 42, 53, 64, 75, 86, 97];
const parents = [-1, 0, 0, 1, 2, -1, 4, 4];

function pathTo(node: number): number[] {
    const path: number[] = [];
    for (let at = node; at >= 0; at = parents[at]) path.unshift(at);
    return path;
}

/**
 * Rows of the same path through a different batch layout differ by llama.cpp's rounding (a few 1e-3
 * here); a node attending to a cell it should not see moves its row by far more (the control below).
 */
const tolerance = 1e-2;

const maxDifference = (left: Float64Array, right: Float64Array): number =>
    left.reduce((most, value, index) => Math.max(most, Math.abs(value - right[index])), 0);

describe.each([
    {name: "a context of its own", options: {}},
    {
        name: "the shared context of continuous batching (batchedSequences 2, treeBranches 4)",
        options: {batchedSequences: 2, treeBranches: 4}
    }
])("NativeSequence token trees (family target) on $name", ({options}) => {
    let backend: NativeBackend;
    let prompt: number[];
    beforeAll(async () => {
        backend = await NativeBackend.load(familyTarget, {contextSize: 128, ...options});
        prompt = [1, ...backend.tokenize("Trees of drafts share the prompt's cells.")];
    });
    afterAll(async () => {
        await backend?.dispose();
    });

    /** The last row of a plain sequence that decoded the prompt, then `after`. */
    async function plainRow(after: readonly number[]): Promise<Float64Array> {
        const sequence = await backend.createSequence();
        try {
            await sequence.evaluate(prompt, {positions: []});
            return (await sequence.evaluate(after))[0];
        } finally {
            await sequence.dispose();
        }
    }

    async function withTree<T>(body: (sequence: BackendSequence) => Promise<T>): Promise<T> {
        const sequence = await backend.createSequence({branches: 4});
        try {
            await sequence.evaluate(prompt, {positions: []});
            return await body(sequence);
        } finally {
            await sequence.dispose();
        }
    }

    it("decodes a whole tree in one call: each node's row is its path's row", async () => {
        const rows = await withTree(async (sequence) => (await sequence.evaluateTree!(tokens, parents, {kind: "logits"})).logits);
        for (let node = 0; node < tokens.length; node++)
            expect(maxDifference(rows[node], await plainRow(pathTo(node).map((at) => tokens[at]))), `node ${node}`).toBeLessThan(tolerance);
    });

    it("control: a row computed over one wrong cell differs by far more than the tolerance", async () => {
        const wrong = await plainRow([tokens[0], tokens[5]]);
        expect(maxDifference(wrong, await plainRow([tokens[5]]))).toBeGreaterThan(20 * tolerance);
    });

    it("decodes a tree one depth per call (a draft model's way) with the same rows", async () => {
        const byDepth = [
            [0, 5],
            [1, 2],
            [3, 4],
            [6, 7]
        ];
        const rows = new Map<number, Float64Array>();
        // Node indexes in the sequence's tree follow the order of the calls.
        const indexOf = new Map<number, number>([[-1, -1]]);
        await withTree(async (sequence) => {
            for (const nodes of byDepth) {
                const result = await sequence.evaluateTree!(
                    nodes.map((node) => tokens[node]),
                    nodes.map((node) => indexOf.get(parents[node])!),
                    {kind: "logits"}
                );
                for (const node of nodes) indexOf.set(node, indexOf.size - 1);
                nodes.forEach((node, index) => rows.set(node, result.logits[index]));
            }
        });
        for (const [node, row] of rows)
            expect(maxDifference(row, await plainRow(pathTo(node).map((at) => tokens[at]))), `node ${node}`).toBeLessThan(tolerance);
    });

    it.each([[[0, 2, 4, 7]], [[0, 1, 3]], [[5]], [[]]])(
        "keeps path %j: the sequence then continues as if it had decoded it",
        async (path) => {
            const next = 11;
            const {row, held} = await withTree(async (sequence) => {
                const argmaxIds = (await sequence.evaluateTree!(tokens, parents, {kind: "argmax"})).argmax!;
                expect(argmaxIds).toHaveLength(tokens.length);
                await sequence.keepTreePath!(path);
                return {row: (await sequence.evaluate([next]))[0], held: [...sequence.tokens]};
            });
            expect(held).toEqual([...prompt, ...path.map((node) => tokens[node]), next]);
            const expected = await plainRow([...path.map((node) => tokens[node]), next]);
            expect(argmax(row)).toBe(argmax(expected));
            expect(maxDifference(row, expected)).toBeLessThan(tolerance);
        }
    );

    it("refuses plain evaluations while a tree is open, a path that is not one, and more branches than it has", async () => {
        await withTree(async (sequence) => {
            await sequence.evaluateTree!([5, 6], [-1, 0], {kind: "argmax"});
            await expect(sequence.evaluate([7])).rejects.toThrow(/open token tree/);
            await expect(sequence.rollback(1)).rejects.toThrow(/open token tree/);
            await expect(sequence.keepTreePath!([1])).rejects.toThrow(/parent/);
            await sequence.keepTreePath!([0]);
            await expect(sequence.evaluateTree!([1, 2, 3, 4, 5], [-1, -1, -1, -1, -1], {kind: "argmax"})).rejects.toThrow(/branches/);
            // A refused call leaves an open tree as it was: its nodes took no branches.
            await sequence.evaluateTree!([7], [-1], {kind: "argmax"});
            await expect(sequence.evaluateTree!([1, 2, 3, 4], [-1, -1, -1, -1], {kind: "argmax"})).rejects.toThrow(/branches/);
            await sequence.evaluateTree!([8], [-1], {kind: "argmax"});
            await sequence.keepTreePath!([1]);
            expect(sequence.tokens.slice(-2)).toEqual([5, 8]);
        });
        if (options.batchedSequences !== undefined) return;
        const plain = await backend.createSequence();
        await expect(plain.evaluateTree!([1], [-1], {kind: "argmax"})).rejects.toThrow(/no branches/);
        await plain.dispose();
    });
});
