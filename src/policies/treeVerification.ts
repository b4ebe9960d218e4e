import type {Chance} from "../random/Chance.js";
import {sampleFromRow, sumOf} from "./rowOperations.js";

/**
 * A token tree a drafter proposed after the pending token (the tree's root).
 *
 *   tokens[i]   the token of node i; parents[i] its parent node (−1: the root). Parents come before
 *               their children, and a node's children are listed in the order they were drawn.
 *   rows[i + 1] the draft's sampler row at node i (rows[0]: at the root), from which that node's
 *               children were drawn one by one without replacement (absent for nodes without
 *               children). Absent altogether for a tree picked deterministically (top-k at T = 0),
 *               which is verified greedily.
 */
export interface DraftTree {
    readonly tokens: readonly number[];
    readonly parents: readonly number[];
    readonly rows?: ReadonlyArray<Float64Array | undefined>;
}

/** What verifying a tree decided. */
export interface TreeVerification {
    /** Accepted nodes, from the first depth down. */
    readonly path: number[];
    /** Their tokens, then the final token (drawn from the target's row, or the target's argmax at T = 0). */
    readonly emitted: number[];
}

/** Children of every node, root first (index 0 = the root, i + 1 = node i), in drawing order. */
export function childrenOf(tree: DraftTree): number[][] {
    const children: number[][] = Array.from({length: tree.tokens.length + 1}, () => []);
    tree.parents.forEach((parent, node) => children[parent + 1].push(node));
    return children;
}

/**
 * T = 0: the longest path that follows the target's argmax; then the target's argmax after it.
 * `targetArgmax[0]` is the target's choice after the root, `targetArgmax[i + 1]` after node i.
 * Emits exactly what target-only greedy decoding emits.
 */
export function verifyTreeGreedy(tree: DraftTree, targetArgmax: readonly number[]): TreeVerification {
    const children = childrenOf(tree);
    const path: number[] = [];
    const emitted: number[] = [];
    let at = -1;
    for (;;) {
        const choice = targetArgmax[at + 1];
        emitted.push(choice);
        const next = children[at + 1].find((child) => tree.tokens[child] === choice);
        if (next === undefined) return {path, emitted};
        path.push(next);
        at = next;
    }
}

/**
 * T > 0: recursive rejection sampling (Jeon et al., "Recursive Speculative Decoding: Accelerating LLM
 * Inference via Sampling Without Replacement", 2024; SpecInfer's multi-step verification with draws
 * without replacement). At a node whose children x₁…x_k were drawn from q without replacement, with
 * the target's row p there:
 *   for i = 1…k: accept xᵢ with probability min(1, p(xᵢ)/qᵢ(xᵢ)) and descend into it; otherwise
 *   p ← norm(max(p − qᵢ, 0)) and qᵢ₊₁ ← qᵢ without xᵢ, renormalised;
 *   if none is accepted (or the node has no children), emit a token drawn from p and stop.
 * Each step is speculative sampling against the residual left by the previous one, so the emitted
 * token follows the target's row exactly, whatever the later children are (proved by enumeration in
 * treeVerification.test.ts), and so does every token of the path after it, its row being the
 * target's at that prefix.
 *
 * `targetRows[0]` is the target's sampler row after the root, `targetRows[i + 1]` after node i.
 */
export function verifyTreeSampling(tree: DraftTree, targetRows: readonly Float64Array[], chance: Chance): TreeVerification {
    const children = childrenOf(tree);
    const path: number[] = [];
    const emitted: number[] = [];
    let at = -1;
    descend: for (;;) {
        const kids = children[at + 1];
        const target = targetRows[at + 1];
        if (kids.length === 0) {
            emitted.push(sampleFromRow(target, chance));
            return {path, emitted};
        }
        const draftRow = tree.rows?.[at + 1];
        if (draftRow === undefined) throw new RangeError(`node ${at} has children but no draft row`);
        const residual = Float64Array.from(target);
        const draft = Float64Array.from(draftRow);
        let residualMass = sumOf(residual);
        let draftMass = sumOf(draft);
        for (const child of kids) {
            const token = tree.tokens[child];
            const p = residual[token] / residualMass;
            const q = draft[token] / draftMass;
            if (q > 0 && chance.accept(Math.min(1, p / q))) {
                path.push(child);
                emitted.push(token);
                at = child;
                continue descend;
            }
            residualMass = subtractClamped(residual, residualMass, draft, draftMass);
            draftMass -= draft[token];
            draft[token] = 0;
            if (!(draftMass > 0)) break;
        }
        emitted.push(chance.choose(residual, residualMass));
        return {path, emitted};
    }
}

/**
 * residual ← max(residual/residualMass − draft/draftMass, 0) (unnormalised); returns its mass. If
 * rounding leaves none (the two rows equal to the last bit), the residual is left as it was.
 */
function subtractClamped(residual: Float64Array, residualMass: number, draft: Float64Array, draftMass: number): number {
    let mass = 0;
    for (let index = 0; index < residual.length; index++) mass += Math.max(residual[index] / residualMass - draft[index] / draftMass, 0);
    if (!(mass > 0)) return residualMass;
    for (let index = 0; index < residual.length; index++)
        residual[index] = Math.max(residual[index] / residualMass - draft[index] / draftMass, 0);
    return mass;
}

/**
 * `count` distinct ids drawn one by one from `row` without replacement (each from the row with the
 * earlier ones removed, renormalised): how a tree's children are drawn at T > 0. Fewer when the row
 * has fewer positive entries.
 */
export function drawWithoutReplacement(row: Float64Array, count: number, chance: Chance): number[] {
    const remaining = Float64Array.from(row);
    const drawn: number[] = [];
    for (let mass = sumOf(remaining); drawn.length < count && mass > 0; mass = sumOf(remaining)) {
        const token = chance.choose(remaining, mass);
        drawn.push(token);
        remaining[token] = 0;
    }
    return drawn;
}

/** The `count` highest entries of `row` (ties: lower id first), highest first: a tree's children at T = 0. */
export function topIds(row: ArrayLike<number>, count: number): number[] {
    const best: number[] = [];
    for (let id = 0; id < row.length; id++) {
        const value = row[id];
        if (best.length === count && value <= row[best[best.length - 1]]) continue;
        let at = best.length;
        while (at > 0 && value > row[best[at - 1]]) at--;
        best.splice(at, 0, id);
        if (best.length > count) best.pop();
    }
    return best;
}
