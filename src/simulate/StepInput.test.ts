import {describe, expect, it} from "vitest";
import {validateProbabilityRow} from "../distributions/validateDistribution.js";
import {InvalidDistributionError, InvalidInputError, InvalidPolicyError, TokenOutOfRangeError} from "../errors.js";
import {parseStepInput} from "./StepInput.js";

const valid = {
    policy: {kind: "strict"},
    targetProbs: [
        [0.5, 0.5, 0],
        [0.2, 0.3, 0.5]
    ],
    draftProbs: [[0.1, 0.6, 0.3]],
    draftTokens: [1]
};

function expectError(patch: object, errorClass: new (...args: never[]) => Error, message: RegExp) {
    const attempt = () => parseStepInput({...valid, ...patch});
    expect(attempt).toThrow(errorClass);
    expect(attempt).toThrow(message);
}

describe("STEP.json validation: bad input gets a typed error naming the field", () => {
    it("accepts the valid example", () => {
        const input = parseStepInput(valid);
        expect(input.gamma).toBe(1);
        expect(input.vocabularySize).toBe(3);
    });

    it("negative probabilities", () =>
        expectError(
            {
                targetProbs: [
                    [0.6, -0.1, 0.5],
                    [0.2, 0.3, 0.5]
                ]
            },
            InvalidDistributionError,
            /targetProbs\[0\]\[1\]: is negative/
        ));
    it("rows not summing to 1 beyond the tolerance", () =>
        expectError({draftProbs: [[0.1, 0.6, 0.2]]}, InvalidDistributionError, /draftProbs\[0\]: sums to 0\.8999/));
    it("rows summing to 1 within the tolerance are fine", () =>
        expect(() => parseStepInput({...valid, draftProbs: [[0.1, 0.6, 0.30005]]})).not.toThrow());
    it("null (JSON's stand-in for NaN) in a row", () =>
        expectError(
            {
                targetProbs: [
                    [0.5, null, 0.5],
                    [0.2, 0.3, 0.5]
                ]
            },
            InvalidDistributionError,
            /targetProbs\[0\]\[1\]: is not a number \(null\)/
        ));
    it("NaN through the programmatic API", () =>
        expect(() => validateProbabilityRow([0.5, NaN, 0.5], 3, "targetProbs[4]")).toThrow(/targetProbs\[4\]\[1\]: is not a number/));
    it("mismatched vocabulary sizes", () =>
        expectError(
            {draftProbs: [[0.5, 0.5]]},
            InvalidDistributionError,
            /draftProbs\[0\]: has 2 entries, expected the vocabulary size 3/
        ));
    it("token ids out of range", () =>
        expectError({draftTokens: [3]}, TokenOutOfRangeError, /draftTokens\[0\]: 3 is not a token id in \[0, 3\)/));
    it("non-integer token ids", () => expectError({draftTokens: [1.5]}, TokenOutOfRangeError, /draftTokens\[0\]/));
    it("γ+1 target rows missing", () => expectError({targetProbs: [[0.5, 0.5, 0]]}, InvalidInputError, /draftProbs: has 1 rows; γ = 0/));
    it("draft token count not matching the target rows", () =>
        expectError(
            {draftTokens: [1, 2], draftProbs: undefined},
            InvalidInputError,
            /draftTokens: has 2 ids, but 2 target rows mean γ = 1/
        ));
    it("unknown policy kind", () => expectError({policy: {kind: "yolo"}}, InvalidPolicyError, /policy\.kind: unknown policy kind/));
    it("unknown policy parameter", () =>
        expectError({policy: {kind: "strict", threshold: 1}}, InvalidPolicyError, /policy: unknown parameter "threshold"/));
    it("a misspelt required parameter is named as unknown, not reported as the missing one", () => {
        expectError({policy: {kind: "fuzzy", treshold: 0.4}}, InvalidPolicyError, /policy: unknown parameter "treshold"/);
        expectError({policy: {kind: "typical", treshold: 0.4}}, InvalidPolicyError, /policy: unknown parameter "treshold"/);
        expectError({policy: {kind: "lossy"}}, InvalidPolicyError, /policy: lossy needs "tau" \(a number\)/);
    });
    it("parameter out of range", () =>
        expectError({policy: {kind: "typical", posteriorAlpha: 2}}, InvalidPolicyError, /policy\.posteriorAlpha/));
    it("missing required parameter", () =>
        expectError({policy: {kind: "fuzzy"}}, InvalidPolicyError, /policy: fuzzy needs "threshold" \(a number\)/));
    it("unknown divergence", () =>
        expectError({policy: {kind: "fuzzy", threshold: 0.3, divergence: "hellinger"}}, InvalidPolicyError, /policy\.divergence/));
    it("unknown top-level field", () => expectError({temperature: 0}, InvalidInputError, /unknown field "temperature"/));
    it("both probabilities and logits", () =>
        expectError(
            {
                targetLogits: [
                    [0, 0, 0],
                    [0, 0, 0]
                ]
            },
            InvalidInputError,
            /either targetProbs or targetLogits/
        ));
    it("sampling with probabilities", () => expectError({sampling: {temperature: 0.5}}, InvalidInputError, /sampling/));
    it('"sample" without draft rows', () =>
        expectError({draftTokens: "sample", draftProbs: undefined}, InvalidInputError, /draftTokens: "sample" needs draftProbs/));
    it("an all-masked logit row", () =>
        expectError(
            {
                targetProbs: undefined,
                targetLogits: [
                    [0, 0, 0],
                    [null, 0, 0]
                ]
            },
            InvalidDistributionError,
            /targetLogits\[1\]\[0\]/
        ));
    it('"-Infinity" strings are masks in JSON logit rows', () => {
        const input = parseStepInput({
            policy: {kind: "greedy"},
            targetLogits: [
                ["-Infinity", 0, 1],
                [0, 0, 0]
            ],
            draftTokens: [2]
        });
        expect(input.targetProbs[0][0]).toBe(0);
    });
    it("an all -Infinity row via the API", () => {
        expect(() =>
            parseStepInput({
                ...valid,
                draftProbs: undefined,
                targetProbs: undefined,
                targetLogits: [
                    [0, 0, 0],
                    [-Infinity, -Infinity, -Infinity]
                ]
            })
        ).toThrow(/targetLogits\[1\]: every logit is -Infinity/);
    });

    it("logits with sampling settings become processed rows; raw logits are kept for policies that need them", () => {
        const input = parseStepInput({
            policy: {kind: "greedy"},
            targetLogits: [
                [1, 3, 2],
                [0, 0, 5]
            ],
            draftTokens: [1],
            sampling: {temperature: 0}
        });
        expect(Array.from(input.targetProbs[0])).toEqual([0, 1, 0]);
        expect(Array.from(input.targetLogits[0])).toEqual([1, 3, 2]);
    });
});
