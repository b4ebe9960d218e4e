import {describe, expect, it} from "vitest";
import {Random} from "../random/Random.js";
import {enumerateOutcomes} from "../random/enumerateOutcomes.js";
import {SeededChance} from "../random/SeededChance.js";
import {randomProbabilityRow} from "../testing/randomRows.js";
import {blockWeights, createBlockPolicy, stopProbabilityAt} from "./blockPolicy.js";
import {createPolicy, parsePolicyConfig} from "./createPolicy.js";
import type {VerificationPolicy} from "./VerificationPolicy.js";

/**
 * Block verification proven by exact enumeration on toy autoregressive models whose rows depend on
 * the whole prefix: the target row at position i depends on the drafted tokens before i, so the
 * weights w_i and the residuals of a step change with the draft, which the context-free rows of
 * losslessness.test.ts cannot show. Every random decision — the draft's samples, the policy's η_i and
 * residual draws, and the target samples that complete the emitted block to γ+1 tokens — is one
 * enumerated branch; the completed sequences must be distributed exactly as the target's own
 * autoregressive distribution over V^(γ+1). Error bound 1e-12.
 */

/** A language model over V tokens given as "row after this prefix" (memoized, seeded per prefix). */
type ToyModel = (prefix: readonly number[]) => Float64Array;

function toyModel(seed: number, vocabularySize: number, zeroFraction = 0.2): ToyModel {
    const rows = new Map<string, Float64Array>();
    return (prefix) => {
        const key = prefix.join(",");
        let row = rows.get(key);
        if (row == null) {
            // One generator per prefix, so a row does not depend on the order rows are asked for.
            const random = new Random(seed * 1_000_003 + hash(key));
            row = randomProbabilityRow(random, vocabularySize, zeroFraction);
            rows.set(key, row);
        }
        return row;
    };
}

function hash(text: string): number {
    let value = 17;
    for (let index = 0; index < text.length; index++) value = (value * 31 + text.charCodeAt(index)) % 1_000_000_007;
    return value;
}

/** A model whose every row is the same (the paper's i.i.d. example). */
function constantModel(row: number[]): ToyModel {
    const values = Float64Array.from(row);
    return () => values;
}

interface Setting {
    target: ToyModel;
    /** Absent: the draft tokens are `fixedDraft` and the step has no draft rows (q = δ_x). */
    draft?: ToyModel;
    fixedDraft?: number[];
    gamma: number;
    vocabularySize: number;
}

/**
 * One speculative step, start to finish, as an enumerable experiment: draft γ tokens, verify them
 * with the target rows along the drafted prefix, then (when `complete`) fill positions after the
 * emitted block with target samples.
 */
function runStep(setting: Setting, policy: VerificationPolicy, complete: boolean) {
    return enumerateOutcomes((chance) => {
        const draftTokens: number[] = [];
        const draftProbs: Float64Array[] = [];
        for (let position = 0; position < setting.gamma; position++) {
            if (setting.draft == null) {
                draftTokens.push(setting.fixedDraft![position]);
                continue;
            }
            const row = setting.draft(draftTokens);
            draftProbs.push(row);
            draftTokens.push(
                chance.choose(
                    row,
                    row.reduce((sum, value) => sum + value, 0)
                )
            );
        }
        const targetProbs = Array.from({length: setting.gamma + 1}, (_value, position) => setting.target(draftTokens.slice(0, position)));
        const result = policy.verify({draftTokens, targetProbs, draftProbs: setting.draft == null ? undefined : draftProbs}, chance);
        const sequence = [...result.emitted];
        while (complete && sequence.length < setting.gamma + 1) {
            const row = setting.target(sequence);
            sequence.push(
                chance.choose(
                    row,
                    row.reduce((sum, value) => sum + value, 0)
                )
            );
        }
        return {sequence, accepted: result.acceptedCount};
    });
}

/** Max |P(completed sequence) − P_target(sequence)| over V^(γ+1), including sequences the target forbids. */
function completedSequenceError(setting: Setting, policy: VerificationPolicy): number {
    const observed = new Map<string, number>();
    for (const {result, probability} of runStep(setting, policy, true)) {
        const key = result.sequence.join(",");
        observed.set(key, (observed.get(key) ?? 0) + probability);
    }
    let maxError = 0;
    const visit = (tokens: number[], probability: number): void => {
        if (tokens.length === setting.gamma + 1) {
            const key = tokens.join(",");
            maxError = Math.max(maxError, Math.abs((observed.get(key) ?? 0) - probability));
            observed.delete(key);
            return;
        }
        const row = setting.target(tokens);
        for (let token = 0; token < setting.vocabularySize; token++) visit([...tokens, token], probability * row[token]);
    };
    visit([], 1);
    // Whatever is left was emitted with target probability 0.
    for (const probability of observed.values()) maxError = Math.max(maxError, probability);
    return maxError;
}

function expectedAccepted(setting: Setting, policy: VerificationPolicy): number {
    return runStep(setting, policy, false).reduce((sum, {result, probability}) => sum + probability * result.accepted, 0);
}

const block = () => createPolicy(parsePolicyConfig({kind: "block"}));
const strict = () => createPolicy(parsePolicyConfig({kind: "strict"}));

describe("block verification is lossless (exact enumeration, prefix-dependent rows)", () => {
    it.each([1, 2, 3, 4, 5, 6, 7, 8])("V = 3, γ = 3, draft rows from a draft model (seed %d)", (seed) => {
        const setting = {target: toyModel(seed, 3), draft: toyModel(seed + 100, 3), gamma: 3, vocabularySize: 3};
        expect(completedSequenceError(setting, block())).toBeLessThan(1e-12);
    });

    it.each([1, 2, 3])("V = 4, γ = 2, sparse rows (half the entries 0: disjoint supports, p(x) = 0, q(x) = 0) (seed %d)", (seed) => {
        const setting = {target: toyModel(seed, 4, 0.5), draft: toyModel(seed + 200, 4, 0.5), gamma: 2, vocabularySize: 4};
        expect(completedSequenceError(setting, block())).toBeLessThan(1e-12);
    });

    it("V = 2, γ = 4 (deep blocks, where weights carry furthest)", () => {
        const setting = {target: toyModel(9, 2, 0), draft: toyModel(19, 2, 0), gamma: 4, vocabularySize: 2};
        expect(completedSequenceError(setting, block())).toBeLessThan(1e-12);
    });

    it("a draft identical to the target keeps every block and adds a bonus token", () => {
        const model = toyModel(4, 3);
        const setting = {target: model, draft: model, gamma: 3, vocabularySize: 3};
        expect(completedSequenceError(setting, block())).toBeLessThan(1e-12);
        expect(expectedAccepted(setting, block())).toBeCloseTo(3, 12);
    });

    it.each([{fixedDraft: [0, 0, 0]}, {fixedDraft: [1, 2, 0]}, {fixedDraft: [2, 2, 2]}, {fixedDraft: [0, 1, 2]}])(
        "q = δ_x (n-gram drafts, no draft rows), fixed draft $fixedDraft: exact, and exactly strict's acceptance",
        ({fixedDraft}) => {
            const setting = {target: toyModel(31, 3), fixedDraft, gamma: 3, vocabularySize: 3};
            expect(completedSequenceError(setting, block())).toBeLessThan(1e-12);
            expect(Math.abs(expectedAccepted(setting, block()) - expectedAccepted(setting, strict()))).toBeLessThan(1e-12);
        }
    );
});

describe("block verification accepts at least as many tokens as token-wise verification (exact expectations)", () => {
    it("the paper's two-token example: p = (1/3, 2/3), q = (2/3, 1/3), γ = 2 — strict 10/9, block 11/9", () => {
        const setting = {target: constantModel([1 / 3, 2 / 3]), draft: constantModel([2 / 3, 1 / 3]), gamma: 2, vocabularySize: 2};
        // strict: α + α² with α = Σ min(p, q) = 2/3. block: E[w_1] + E[w_2] = 2/3 + 5/9.
        expect(expectedAccepted(setting, strict())).toBeCloseTo(10 / 9, 12);
        expect(expectedAccepted(setting, block())).toBeCloseTo(11 / 9, 12);
        expect(completedSequenceError(setting, block())).toBeLessThan(1e-12);
    });

    it("on 40 random prefix-dependent model pairs: never fewer, strictly more on most, and the gain is reported", () => {
        let gains = 0;
        let totalStrict = 0;
        let totalBlock = 0;
        for (let seed = 0; seed < 40; seed++) {
            const setting = {target: toyModel(seed, 3, 0.1), draft: toyModel(seed + 500, 3, 0.1), gamma: 3, vocabularySize: 3};
            const strictAccepted = expectedAccepted(setting, strict());
            const blockAccepted = expectedAccepted(setting, block());
            expect(blockAccepted).toBeGreaterThanOrEqual(strictAccepted - 1e-12);
            if (blockAccepted > strictAccepted + 1e-9) gains++;
            totalStrict += strictAccepted;
            totalBlock += blockAccepted;
        }
        console.info(
            `block vs strict, 40 random pairs, V = 3, γ = 3: mean accepted ${(totalBlock / 40).toFixed(4)} vs ${(totalStrict / 40).toFixed(4)} (+${((100 * (totalBlock - totalStrict)) / totalStrict).toFixed(2)}%), more on ${gains}/40`
        );
        expect(gains).toBeGreaterThan(20);
    });

    it("E[accepted] = Σ_i E[w_i] (P(τ ≥ i | x_<i) = w_i, the identity behind the proof)", () => {
        const target = toyModel(77, 3);
        const draft = toyModel(78, 3);
        const gamma = 3;
        let sum = 0;
        // Σ over drafts x of Q(x) Σ_{i≥1} w_i(x): enumerate the draft's own samples only.
        for (const {result, probability} of enumerateOutcomes((chance) => {
            const draftTokens: number[] = [];
            const draftProbs: Float64Array[] = [];
            for (let position = 0; position < gamma; position++) {
                draftProbs.push(draft(draftTokens));
                draftTokens.push(
                    chance.choose(
                        draftProbs[position],
                        draftProbs[position].reduce((total, value) => total + value, 0)
                    )
                );
            }
            const targetProbs = Array.from({length: gamma + 1}, (_value, position) => target(draftTokens.slice(0, position)));
            const weights = blockWeights({draftTokens, targetProbs, draftProbs}, new Float64Array(gamma + 1));
            return weights.slice(1).reduce((total, weight) => total + weight, 0);
        }))
            sum += probability * result;
        expect(expectedAccepted({target, draft, gamma, vocabularySize: 3}, block())).toBeCloseTo(sum, 12);
    });
});

describe("block policy details", () => {
    it("stop probabilities: h = r / (r + 1 − w), 1 where the walk cannot arrive (r = 0, w = 1)", () => {
        expect(stopProbabilityAt(0.2, 0.5)).toBeCloseTo(0.2 / 0.7, 15);
        expect(stopProbabilityAt(0, 1)).toBe(1);
        expect(stopProbabilityAt(0, 0)).toBe(0);
        expect(stopProbabilityAt(0.3, 1)).toBe(1);
    });

    it("keeps a token whose own ratio is below 1 when the prefix before it had slack (strict cannot)", () => {
        // Row 0 over-weights token 0 in q (ratio 1/2); row 1 under-weights token 1 in q (ratio 2).
        const step = {
            draftTokens: [0, 1],
            targetProbs: [Float64Array.of(1 / 3, 2 / 3), Float64Array.of(1 / 3, 2 / 3), Float64Array.of(0.5, 0.5)],
            draftProbs: [Float64Array.of(2 / 3, 1 / 3), Float64Array.of(2 / 3, 1 / 3)]
        };
        // w = (1, 1/2, 1): the block keeps both tokens with probability h_2 = w_2 = 1.
        const result = createBlockPolicy().verify(step, new SeededChance(1));
        expect(result.acceptedCount).toBe(2);
        expect(result.positions.map((position) => position.accepted)).toEqual([true, true]);
        expect(result.positions[0].values.blockWeight).toBe(0.5);
        expect(result.finalTokenSource).toBe("bonus");
    });

    it("γ = 0 emits one token from the target's row", () => {
        const result = createBlockPolicy().verify({draftTokens: [], targetProbs: [Float64Array.of(0, 1, 0)]}, new SeededChance(3));
        expect(result).toEqual({acceptedCount: 0, emitted: [1], finalTokenSource: "bonus", positions: []});
    });

    it("reuses its scratch rows across steps of different γ and V", () => {
        const policy = createBlockPolicy();
        const random = new Random(8);
        for (const [vocabularySize, gamma] of [
            [5, 3],
            [7, 1],
            [5, 4],
            [3, 0]
        ]) {
            const targetProbs = Array.from({length: gamma + 1}, () => randomProbabilityRow(random, vocabularySize));
            const draftProbs = Array.from({length: gamma}, () => randomProbabilityRow(random, vocabularySize));
            const draftTokens = draftProbs.map((row) => row.findIndex((value) => value > 0));
            const result = policy.verify({draftTokens, targetProbs, draftProbs}, new SeededChance(vocabularySize));
            expect(result.emitted.length).toBe(result.acceptedCount + 1);
            for (const token of result.emitted) expect(token).toBeLessThan(vocabularySize);
        }
    });
});
