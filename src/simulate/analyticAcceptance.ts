import {blockWeights, fillResidual, stopProbabilityAt} from "../policies/blockPolicy.js";
import type {StepInput} from "./StepInput.js";

/** Per-position acceptance probabilities a lossless policy has in closed form, and the rule they follow. */
export interface AnalyticAcceptance {
    readonly rule: string;
    readonly perPosition: number[];
}

/**
 * The probability that each draft position is accepted, given it is reached, for the policies whose
 * acceptance has a closed form: `strict` (min(1, p/q): Σ min(p, q) for drafts drawn from q), `match`
 * (the draft equals the target's own sample: Σ p·q for drawn drafts, p(x) for a given x) and `greedy`
 * (the draft is the target's argmax, lowest id on ties) and `block` (blockAcceptance). Null for the
 * other policies, or when drafts are drawn but the step has no draft rows.
 */
export function analyticAcceptance(input: StepInput): AnalyticAcceptance | null {
    const kind = input.policy.kind;
    if (kind === "block") return blockAcceptance(input);
    if (kind !== "strict" && kind !== "match" && kind !== "greedy") return null;
    const gamma = input.targetProbs.length - 1;
    const drawn = input.draftTokens === "sample";
    if (drawn && input.draftProbs == null) return null;
    const perPosition = Array.from({length: gamma}, (_value, index) => {
        const p = input.targetProbs[index];
        const q = input.draftProbs?.[index];
        if (drawn) return expectation(q!, (token) => acceptance(kind, p, q, token));
        return acceptance(kind, p, q, (input.draftTokens as Int32Array)[index]);
    });
    const rules = {
        strict: drawn ? "strict: α = Σ min(p, q)" : "strict: α = min(1, p(x)/q(x))",
        match: drawn ? "match: α = Σ p·q" : "match: α = p(x)",
        greedy: drawn ? "greedy: α = q(argmax p)" : "greedy: α = [x = argmax p]"
    };
    return {rule: rules[kind], perPosition};
}

/**
 * Block verification's acceptance (policies/blockPolicy.ts): per position, P(τ ≥ i) / P(τ ≥ i−1), so
 * that the expected tokens per step is 1 + Σ_i P(τ ≥ i).
 *
 * Drawn drafts: P(τ ≥ i) = E[w_i] (P(τ ≥ i | x_<i) = w_i, the identity behind the proof). The law of
 * w_i is propagated exactly, one row at a time (w_i = min(1, w_{i−1}·p(x)/q(x)), x ~ q; the rows of a
 * STEP.json do not depend on the drafted prefix), merging equal weights. Its support can grow as
 * V^i: beyond maximumBlockWeightStates distinct weights at one position the answer is null rather
 * than an approximation.
 *
 * Given draft ids: the backward walk stops at j with probability h_j, so P(τ ≥ i) = 1 − Π_{j≥i}(1 − h_j).
 */
export function blockAcceptance(input: StepInput): AnalyticAcceptance | null {
    const gamma = input.targetProbs.length - 1;
    const reach = input.draftTokens === "sample" ? expectedBlockWeights(input) : givenDraftReach(input, input.draftTokens);
    if (reach == null) return null;
    const perPosition = Array.from({length: gamma}, (_value, index) =>
        reach[index] > 0 ? Math.min(1, reach[index + 1] / reach[index]) : 0
    );
    const rule =
        input.draftTokens === "sample"
            ? "block: α_i = E[w_i]/E[w_{i−1}], w_i = min(1, w_{i−1}·p/q)"
            : "block: α_i = P(τ ≥ i)/P(τ ≥ i−1), P(τ ≥ i) = 1 − Π_{j≥i}(1 − h_j)";
    return {rule, perPosition};
}

/** Most distinct block weights tracked per position before blockAcceptance gives up (returns null). */
export const maximumBlockWeightStates = 200_000;

/** [E[w_0] = 1, E[w_1], …, E[w_γ]] for drafts drawn from the draft rows; null past the state budget. */
function expectedBlockWeights(input: StepInput): number[] | null {
    if (input.draftProbs == null) return null;
    const expectations = [1];
    // law: weight value → probability, over the draws x_0..x_{i−1}.
    let law = new Map<number, number>([[1, 1]]);
    for (let position = 0; position < input.targetProbs.length - 1; position++) {
        const p = input.targetProbs[position];
        const q = input.draftProbs[position];
        const next = new Map<number, number>();
        for (const [weight, probability] of law)
            for (let token = 0; token < q.length; token++) {
                if (q[token] === 0) continue;
                const value = Math.min(1, (weight * p[token]) / q[token]);
                next.set(value, (next.get(value) ?? 0) + probability * q[token]);
            }
        if (next.size > maximumBlockWeightStates) return null;
        law = next;
        let expectation = 0;
        for (const [weight, probability] of law) expectation += weight * probability;
        expectations.push(expectation);
    }
    return expectations;
}

/** [P(τ ≥ 0) = 1, P(τ ≥ 1), …, P(τ ≥ γ)] for given draft ids: h_j from the weights and residual masses. */
function givenDraftReach(input: StepInput, draftTokens: Int32Array): number[] {
    const gamma = draftTokens.length;
    const step = {draftTokens, targetProbs: input.targetProbs, draftProbs: input.draftProbs};
    const weights = blockWeights(step, new Float64Array(gamma + 1));
    const row = new Float64Array(input.vocabularySize);
    const reach = new Array<number>(gamma + 1);
    // P(τ < i) = Π_{j=i}^{γ} (1 − h_j), with h_γ = w_γ.
    let below = 1 - weights[gamma];
    reach[gamma] = weights[gamma];
    for (let position = gamma - 1; position >= 0; position--) {
        reach[position] = 1 - below * (1 - stopProbabilityAt(fillResidual(step, position, weights[position], row), weights[position]));
        below = 1 - reach[position];
    }
    reach[0] = 1;
    return reach;
}

function acceptance(kind: "strict" | "match" | "greedy", p: Float64Array, q: Float64Array | undefined, token: number): number {
    if (kind === "match") return p[token];
    if (kind === "greedy") return token === argmax(p) ? 1 : 0;
    // A q-less proposal is verified as q = δ_x: accepted with probability p(x).
    if (q == null) return p[token];
    return q[token] === 0 ? 0 : Math.min(1, p[token] / q[token]);
}

function expectation(q: Float64Array, value: (token: number) => number): number {
    let sum = 0;
    for (let token = 0; token < q.length; token++) if (q[token] > 0) sum += q[token] * value(token);
    return sum;
}

function argmax(row: Float64Array): number {
    let best = 0;
    for (let token = 1; token < row.length; token++) if (row[token] > row[best]) best = token;
    return best;
}
