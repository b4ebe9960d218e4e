import type {CandidateRows} from "../backend/residualSequence.js";
import type {SeededChance} from "../random/SeededChance.js";
import type {DrawnDraft} from "./drafters/Drafter.js";

/** What verifyOnCandidates reads beyond the target's candidate rows. */
export interface CandidateVerification {
    readonly rows: CandidateRows;
    /** The drafted id each row verifies (−1: none, the bonus row). */
    readonly drafted: readonly number[];
    /** The draft model's tokens (q at each, the rest on demand); absent for a draft without probabilities (q = δ). */
    readonly draft: DrawnDraft | undefined;
    readonly chance: SeededChance;
    /** Row `row`'s whole sampler row of the target, decoded again (the fallback when every candidate was rejected). */
    readonly targetRow: (row: number) => Promise<Float64Array>;
}

/**
 * Strict verification (speculative sampling) on the few values a device returns per target row:
 * x_j is accepted with probability min(1, p_j(x_j) / q_j(x_j)); at the first rejection the step emits
 * a draw from the residual r ∝ max(0, p_j − q_j), made by rejection sampling with p_j as the proposal:
 * candidate y_i ~ p_j (drawn on the device) is accepted with probability max(0, 1 − q_j(y_i) / p_j(y_i)),
 * so an accepted candidate has law p_j(y)·max(0, 1 − q_j(y)/p_j(y)) ∝ r(y). q_j at the candidates is read
 * from the draft (decoding row j's input again); when all K candidates fail, the residual is drawn
 * from the two whole rows instead, which is r again — so the emitted token has law r either way.
 *
 * Returns, per row, the id the step emits there if it gets that far (the greedy policy then keeps the
 * accepted prefix): the drafted id where accepted, the residual draw at the first rejection, and the
 * bonus row's first candidate (a plain draw from p); `fallback` tells whether whole rows were read.
 */
export async function verifyOnCandidates(input: CandidateVerification): Promise<{ids: number[]; fallback: boolean}> {
    const {rows, drafted, chance} = input;
    const ids: number[] = [];
    for (let row = 0; row < drafted.length; row++) {
        const id = drafted[row]!;
        const first = rows.candidates[row]![0]!;
        if (id < 0) {
            ids.push(first);
            continue;
        }
        const q = input.draft?.probabilities[row] ?? 1;
        const p = rows.draftedProbabilities[row]!;
        if (chance.accept(q > 0 ? p / q : 1)) {
            ids.push(id);
            continue;
        }
        const residual = await residualDraw(input, row, id);
        ids.push(residual.id);
        // Rows past the first rejection are never read: the greedy policy stops at the residual draw.
        while (ids.length < drafted.length) ids.push(residual.id);
        return {ids, fallback: residual.fallback};
    }
    return {ids, fallback: false};
}

/** A draw from row `row`'s residual max(0, p − q) where the drafted `rejected` was rejected. */
async function residualDraw(input: CandidateVerification, row: number, rejected: number): Promise<{id: number; fallback: boolean}> {
    const {rows, draft, chance} = input;
    const candidates = rows.candidates[row]!;
    const p = rows.candidateProbabilities[row]!;
    // q = δ at the drafted id (a draft without probabilities): 0 at every other candidate.
    const q = draft !== undefined ? await draft.probabilitiesAt(row, candidates) : candidates.map((id) => (id === rejected ? 1 : 0));
    for (const [index, id] of candidates.entries()) {
        // The rejected id has residual 0 (a rejection means p < q there): never emitted, whatever rounding says.
        if (id === rejected || !(p[index]! > 0)) continue;
        const acceptance = 1 - q[index]! / p[index]!;
        if (acceptance > 0 && chance.accept(acceptance)) return {id, fallback: false};
    }
    const target = await input.targetRow(row);
    const draftRow = draft !== undefined ? await draft.rowAt(row) : undefined;
    const weights = target.map((probability, id) => (id === rejected ? 0 : Math.max(0, probability - (draftRow?.[id] ?? 0))));
    let total = 0;
    for (const weight of weights) total += weight;
    if (total > 0) return {id: chance.choose(weights, total), fallback: true};
    // p ≤ q everywhere but at the rejected id: p = q up to rounding, where a rejection has probability 0.
    const rest = target.map((probability, id) => (id === rejected ? 0 : probability));
    let restTotal = 0;
    for (const weight of rest) restTotal += weight;
    return {id: restTotal > 0 ? chance.choose(rest, restTotal) : rejected, fallback: true};
}
