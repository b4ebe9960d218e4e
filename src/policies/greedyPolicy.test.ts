import {describe, expect, it} from "vitest";
import {SeededChance} from "../random/SeededChance.js";
import {createGreedyPolicy} from "./greedyPolicy.js";

/** A one-hot row of size V on `token` (what temperature 0 makes of any target row). */
function oneHot(token: number, vocabularySize = 10): Float64Array {
    const row = new Float64Array(vocabularySize);
    row[token] = 1;
    return row;
}

/**
 * vLLM v1's greedy verification cases (tests/v1/sample/test_rejection_sampler.py): draft tokens, target argmax per position, bonus token → emitted tokens.
 */
const vllmGreedyCases: Array<{draft: number[]; argmax: number[]; bonus: number; emitted: number[]}> = [
    {draft: [1, 2, 3], argmax: [1, 2, 3], bonus: 4, emitted: [1, 2, 3, 4]},
    {draft: [1, 2, 3], argmax: [1, 5, 3], bonus: 4, emitted: [1, 5]},
    {draft: [1, 2], argmax: [1, 2], bonus: 5, emitted: [1, 2, 5]},
    {draft: [3], argmax: [3], bonus: 4, emitted: [3, 4]},
    {draft: [1], argmax: [1], bonus: 2, emitted: [1, 2]},
    {draft: [], argmax: [], bonus: 5, emitted: [5]},
    {draft: [1, 2, 3], argmax: [1, 2, 7], bonus: 0, emitted: [1, 2, 7]},
    {draft: [4, 5, 6], argmax: [4, 8, 6], bonus: 0, emitted: [4, 8]},
    {draft: [1], argmax: [2], bonus: 0, emitted: [2]},
    {draft: [1, 2], argmax: [1, 5], bonus: 6, emitted: [1, 5]},
    {draft: [3, 4], argmax: [3, 4], bonus: 7, emitted: [3, 4, 7]}
];

describe("greedy policy", () => {
    it.each(vllmGreedyCases)("vLLM case draft $draft, argmax $argmax, bonus $bonus → $emitted", ({draft, argmax, bonus, emitted}) => {
        const result = createGreedyPolicy().verify(
            {
                draftTokens: draft,
                targetProbs: [...argmax.map((token) => oneHot(token)), oneHot(bonus)]
            },
            new SeededChance(0)
        );
        expect(result.emitted).toEqual(emitted);
        expect(result.acceptedCount).toBe(emitted.length - 1);
        expect(result.finalTokenSource).toBe(emitted.length === draft.length + 1 ? "bonus" : "target-argmax");
    });

    it("breaks argmax ties by the lowest token id", () => {
        const tie = Float64Array.from([0.1, 0.4, 0.1, 0.4]);
        const result = createGreedyPolicy().verify({draftTokens: [3], targetProbs: [tie, tie]}, new SeededChance(0));
        expect(result.emitted).toEqual([1]);
        expect(result.positions[0].reason).toBe("differs-from-target-argmax");
    });

    it("uses raw logits for the argmax when given (probabilities can tie after rounding where logits do not)", () => {
        const probabilities = Float64Array.from([0.5, 0.5]);
        const logits = Float64Array.from([1, 1 + 1e-12]);
        const result = createGreedyPolicy().verify(
            {draftTokens: [1], targetProbs: [probabilities, probabilities], targetLogits: [logits, logits]},
            new SeededChance(0)
        );
        expect(result.emitted).toEqual([1, 1]);
    });
});
