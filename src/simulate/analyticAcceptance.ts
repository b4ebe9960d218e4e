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
 * (the draft is the target's argmax, lowest id on ties). Null for the other policies, or when drafts
 * are drawn but the step has no draft rows.
 */
export function analyticAcceptance(input: StepInput): AnalyticAcceptance | null {
    const kind = input.policy.kind;
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
