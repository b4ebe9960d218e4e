import {describe, expect, it} from "vitest";
import {InvalidPolicyError} from "../errors.js";
import {SeededChance} from "../random/SeededChance.js";
import {createPolicy, parsePolicyConfig} from "./createPolicy.js";
import {CorrectionMemory} from "./CorrectionMemory.js";
import type {VerificationStep} from "./VerificationPolicy.js";

/**
 * A greedy (temperature 0) step of one draft token: target logits favour 0 over 1 by `gap`, the draft
 * proposed 1. Standard verification rejects it and recovers 0.
 */
function nearTieStep(gap: number): VerificationStep {
    const targetLogits = [Float64Array.from([2, 2 - gap, -5]), Float64Array.from([0, 1, 2])];
    const oneHot = (token: number) => Float64Array.from([0, 1, 2], (id) => (id === token ? 1 : 0));
    return {draftTokens: [1], draftProbs: [oneHot(1)], targetProbs: [oneHot(0), oneHot(2)], targetLogits};
}

describe("calibrated policy (the Calibrated SD paper)", () => {
    it("rescues only when the memory count reaches the threshold AND the gate passes", () => {
        const cases = [
            {count: 6, gap: 1, rescued: true}, // p(1)/p(0) = e^-1 ≥ 0.01, frequent pair
            {count: 5, gap: 1, rescued: false}, // infrequent
            {count: 6, gap: 5, rescued: false}, // e^-5 < 0.01: the gate blocks
            {count: 50, gap: 4.7, rescued: false}, // ln 0.01 = −4.605: just outside
            {count: 6, gap: 4.6, rescued: true} // just inside
        ];
        for (const {count, gap, rescued} of cases) {
            const memory = new CorrectionMemory(3);
            memory.record(1, 0, count);
            const policy = createPolicy(parsePolicyConfig({kind: "calibrated", onlineUpdate: false}), {correctionMemory: memory});
            const result = policy.verify(nearTieStep(gap), new SeededChance(0));
            expect(result.emitted).toEqual(rescued ? [1, 2] : [0]);
            expect(result.positions[0].reason).toBe(
                rescued ? "rescued-by-memory-and-gate" : count < 6 ? "rejected-infrequent-pair" : "rejected-by-gate"
            );
        }
    });

    it("updates the memory online on every divergence, so the 6th repeat is rescued", () => {
        const memory = new CorrectionMemory(3);
        const policy = createPolicy(parsePolicyConfig({kind: "calibrated"}), {correctionMemory: memory});
        const outcomes = Array.from({length: 8}, () => policy.verify(nearTieStep(1), new SeededChance(0)).acceptedCount);
        expect(outcomes).toEqual([0, 0, 0, 0, 0, 0, 1, 1]);
        expect(memory.count(1, 0)).toBe(8);
    });

    it("lossy (gate alone) rescues any near-tie regardless of history", () => {
        const policy = createPolicy(parsePolicyConfig({kind: "lossy", tau: 0.01}));
        expect(policy.verify(nearTieStep(1), new SeededChance(0)).emitted).toEqual([1, 2]);
        expect(policy.verify(nearTieStep(5), new SeededChance(0)).emitted).toEqual([0]);
    });

    it("never rescues a masked token (raw logit −∞)", () => {
        const step = nearTieStep(1);
        step.targetLogits![0][1] = -Infinity;
        const policy = createPolicy(parsePolicyConfig({kind: "lossy", tau: 1e-300}));
        expect(policy.verify(step, new SeededChance(0)).emitted).toEqual([0]);
    });
});

describe("CorrectionMemory", () => {
    it("inline memory entries must be inside the vocabulary", () => {
        expect(() => createPolicy(parsePolicyConfig({kind: "calibrated", memoryEntries: [[1, 3, 2]]}), {vocabularySize: 3})).toThrow(
            InvalidPolicyError
        );
    });
});
