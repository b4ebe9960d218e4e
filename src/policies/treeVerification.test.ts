import {describe, expect, it} from "vitest";
import type {Chance} from "../random/Chance.js";
import {enumerateOutcomes} from "../random/enumerateOutcomes.js";
import {Random} from "../random/Random.js";
import {randomProbabilityRow} from "../testing/randomRows.js";
import {childrenOf, type DraftTree, drawWithoutReplacement, topIds, verifyTreeGreedy, verifyTreeSampling} from "./treeVerification.js";

/**
 * Token trees are lossless by enumeration: every random decision of drafting (children drawn without
 * replacement, chains sampled) and of recursive rejection sampling is enumerated with its exact
 * probability. Target and draft rows depend on the whole prefix, as a model's do. The emitted tokens,
 * completed to a fixed length by independent target draws, must follow Π p(yᵢ | y<ᵢ) exactly: what
 * target-only sampling gives.
 */

const vocabularySize = 4;

/**
 * Rows that depend on the prefix: a random row per prefix, the same whenever it is asked for (made
 * once: the enumeration replays every path from the root, asking for the same rows again and again).
 */
function prefixRows(seed: number): (prefix: readonly number[]) => Float64Array {
    const rows = new Map<number, Float64Array>();
    return (prefix) => {
        const key = prefix.reduce((hash, token) => hash * (vocabularySize + 1) + token + 1, 0);
        let row = rows.get(key);
        if (row === undefined) {
            row = randomProbabilityRow(new Random(seed * 100_003 + key), vocabularySize, 0);
            // Some zeros, as top-k/top-p truncation leaves.
            if (prefix.length % 2 === 1) row[(prefix[prefix.length - 1] + 1) % vocabularySize] = 0;
            const sum = row.reduce((total, value) => total + value, 0);
            row = row.map((value) => value / sum);
            rows.set(key, row);
        }
        return row;
    };
}

/** Draws a tree: `widths[d]` children per node at depth d, each drawn from q without replacement. */
function drawTree(q: (prefix: readonly number[]) => Float64Array, widths: readonly number[], chance: Chance): DraftTree {
    const tokens: number[] = [];
    const parents: number[] = [];
    const rows: Array<Float64Array | undefined> = [];
    const prefixOf = (node: number): number[] => (node < 0 ? [] : [...prefixOf(parents[node]), tokens[node]]);
    let frontier = [-1];
    for (const width of widths) {
        const next: number[] = [];
        for (const node of frontier) {
            const row = q(prefixOf(node));
            rows[node + 1] = row;
            for (const token of drawWithoutReplacement(row, width, chance)) {
                tokens.push(token);
                parents.push(node);
                next.push(tokens.length - 1);
            }
        }
        frontier = next;
    }
    return {tokens, parents, rows};
}

/** Max |P(completed output) − Π p| over all sequences of `length` tokens. */
function completedError(
    outcomes: Array<{result: number[]; probability: number}>,
    p: (prefix: readonly number[]) => Float64Array,
    length: number
): number {
    const completed = new Map<string, number>();
    const extend = (tokens: number[], weight: number): void => {
        if (tokens.length >= length) {
            const key = tokens.slice(0, length).join(",");
            completed.set(key, (completed.get(key) ?? 0) + weight);
            return;
        }
        const row = p(tokens);
        for (let id = 0; id < vocabularySize; id++) if (row[id] > 0) extend([...tokens, id], weight * row[id]);
    };
    for (const {result, probability} of outcomes) extend(result, probability);
    let error = 0;
    const visit = (tokens: number[], probability: number): void => {
        if (tokens.length === length) {
            error = Math.max(error, Math.abs((completed.get(tokens.join(",")) ?? 0) - probability));
            completed.delete(tokens.join(","));
            return;
        }
        const row = p(tokens);
        for (let id = 0; id < vocabularySize; id++) visit([...tokens, id], probability * row[id]);
    };
    visit([], 1);
    // Anything left was emitted with target probability 0.
    for (const leftover of completed.values()) error = Math.max(error, leftover);
    return error;
}

function outputDistribution(seed: number, widths: readonly number[]): Array<{result: number[]; probability: number}> {
    const p = prefixRows(seed);
    const q = prefixRows(seed + 1000);
    return enumerateOutcomes((chance) => {
        const tree = drawTree(q, widths, chance);
        const prefixOf = (node: number): number[] => (node < 0 ? [] : [...prefixOf(tree.parents[node]), tree.tokens[node]]);
        const targetRows = [p([]), ...tree.tokens.map((_token, node) => p(prefixOf(node)))];
        return verifyTreeSampling(tree, targetRows, chance).emitted;
    });
}

describe("recursive rejection sampling over token trees", () => {
    it.each([
        {widths: [2], seed: 1},
        {widths: [3], seed: 2},
        {widths: [4], seed: 3},
        {widths: [2, 1], seed: 4},
        {widths: [2, 2], seed: 5},
        {widths: [3, 1, 1], seed: 6},
        {widths: [1, 2], seed: 7},
        {widths: [1, 1, 1], seed: 8}
    ])(
        "emits target-only's distribution exactly for trees of widths $widths (prefix-dependent rows)",
        ({widths, seed}) => {
            const outcomes = outputDistribution(seed, widths);
            expect(completedError(outcomes, prefixRows(seed), widths.length + 1)).toBeLessThan(1e-12);
        },
        // [3, 1, 1] enumerates every tree and every verification of it: seconds on a busy machine.
        30_000
    );

    it("control: verifying every child against the target's own row (no residual after a rejection) is not exact", () => {
        const seed = 11;
        const p = prefixRows(seed);
        const q = prefixRows(seed + 1000);
        const outcomes = enumerateOutcomes((chance) => {
            const tree = drawTree(q, [3], chance);
            let draft = Float64Array.from(q([]));
            for (const child of childrenOf(tree)[0]) {
                const token = tree.tokens[child];
                const mass = draft.reduce((total, value) => total + value, 0);
                if (chance.accept(Math.min(1, p([])[token] / (draft[token] / mass)))) return [token];
                draft = draft.map((value, id) => (id === token ? 0 : value));
            }
            return drawOne(p([]), chance);
        });
        expect(completedError(outcomes, p, 1)).toBeGreaterThan(1e-3);
    });

    it("accepts more tokens per call than a single chain of the same depth", () => {
        const seed = 21;
        const mean = (outcomes: Array<{result: number[]; probability: number}>): number =>
            outcomes.reduce((total, {result, probability}) => total + probability * result.length, 0);
        expect(mean(outputDistribution(seed, [3, 1]))).toBeGreaterThan(mean(outputDistribution(seed, [1, 1])) + 0.05);
    });
});

function drawOne(row: Float64Array, chance: Chance): number[] {
    return [
        chance.choose(
            row,
            row.reduce((total, value) => total + value, 0)
        )
    ];
}

describe("greedy verification over token trees", () => {
    //        0:5 ─ 2:7 ─ 4:1
    //  root ┤
    //        1:6 ─ 3:8
    const tree: DraftTree = {tokens: [5, 6, 7, 8, 1], parents: [-1, -1, 0, 1, 2]};

    it("follows the target's argmax as deep as the tree goes, then emits the argmax after it", () => {
        expect(verifyTreeGreedy(tree, [6, 0, 8, 0, 3, 0])).toEqual({path: [1, 3], emitted: [6, 8, 3]});
        expect(verifyTreeGreedy(tree, [5, 7, 0, 1, 0, 9])).toEqual({path: [0, 2, 4], emitted: [5, 7, 1, 9]});
        expect(verifyTreeGreedy(tree, [9, 0, 0, 0, 0, 0])).toEqual({path: [], emitted: [9]});
        expect(verifyTreeGreedy(tree, [5, 3, 0, 0, 0, 0])).toEqual({path: [0], emitted: [5, 3]});
    });

    it("picks the top ids highest first, lower id first on ties", () => {
        expect(topIds([0.1, 0.4, 0.4, 0.05, 0.05], 3)).toEqual([1, 2, 0]);
        expect(topIds([0.2, 0.8], 5)).toEqual([1, 0]);
    });
});
