import {describe, expect, it} from "vitest";
import {addPosition, emptyDivergenceSums, meanDivergences, mergeDivergenceSums} from "./DivergenceSums.js";

describe("divergence sums on hand-built distributions", () => {
    // Position 1: p = [0.5, 0.3, 0.2], q = [0.25, 0.25, 0.5], reference token 0.
    //   α = min(.5,.25) + min(.3,.25) + min(.2,.5) = 0.25 + 0.25 + 0.2 = 0.7; TV = ½(0.25 + 0.05 + 0.3) = 0.3.
    //   CE = −(0.5 ln 0.25 + 0.3 ln 0.25 + 0.2 ln 0.5) = 0.8·1.386294 + 0.2·0.693147 = 1.247665.
    //   H(p) = 0.346574 + 0.361192 + 0.321888 = 1.029653, so KL = 0.218012.
    //   argmax p = 0 ≠ argmax q = 2. r_q = 1 − q(0) = 0.75, r_p = 1 − p(0) = 0.5.
    // Position 2: p = [1, 0, 0], q = [0.5, 0.5, 0], reference token 1.
    //   α = 0.5, TV = 0.5, CE = ln 2 = 0.693147 = KL (H(p) = 0); argmax both 0 (lowest id on q's tie).
    //   r_q = 1 − 0.5 = 0.5, r_p = 1 − 0 = 1.
    const first = () => {
        const sums = emptyDivergenceSums();
        addPosition(sums, [0.5, 0.3, 0.2], [0.25, 0.25, 0.5], 2, 0);
        return sums;
    };
    const second = () => {
        const sums = emptyDivergenceSums();
        addPosition(sums, [1, 0, 0], [0.5, 0.5, 0], 2, 1);
        return sums;
    };

    it("gives α, D, KL, TV and fitness of one position", () => {
        const means = meanDivergences(first());
        expect(means.alpha).toBeCloseTo(0.7, 12);
        expect(means.tv).toBeCloseTo(0.3, 12);
        expect(means.crossEntropy).toBeCloseTo(1.247665, 6);
        expect(means.kl).toBeCloseTo(0.218012, 6);
        expect(means.argmaxAgreement).toBe(0);
        expect(means.fitness).toBeCloseTo(0.25, 12);
        expect(means.targetMisfit).toBeCloseTo(0.5, 12);
    });

    it("pools positions: D_T and α are position means, and Theorem 2's bound holds", () => {
        const means = meanDivergences(mergeDivergenceSums([first(), second()]));
        // D_T = (1.247665 + 0.693147)/2 = 0.970406; α = (0.7 + 0.5)/2 = 0.6; agreement 1/2.
        expect(means.positions).toBe(2);
        expect(means.crossEntropy).toBeCloseTo(0.970406, 6);
        expect(means.alpha).toBeCloseTo(0.6, 12);
        expect(means.kl).toBeCloseTo((0.218012 + 0.693147) / 2, 6);
        expect(means.argmaxAgreement).toBe(0.5);
        // 1 − r_q = 1 − (0.75 + 0.5)/2 = 0.375; r_p = (0.5 + 1)/2 = 0.75; |0.6 − 0.375| = 0.225 ≤ 0.75.
        expect(means.fitness).toBeCloseTo(0.375, 12);
        expect(means.targetMisfit).toBeCloseTo(0.75, 12);
        expect(Math.abs(means.alpha - means.fitness!)).toBeLessThanOrEqual(means.targetMisfit!);
        // The Disparate Impacts paper eq. 4 averages f_γ(α(s)) over positions: γ = 2 gives f(0.7) = 1 + 0.7 + 0.49 = 2.19 and
        // f(0.5) = 1.75, mean 1.97 — above f_2 of the mean α, f(0.6) = 1.96 (Jensen, f_γ convex for γ ≥ 2).
        expect(means.tokensPerStep).toBeCloseTo(1.97, 12);
    });

    it("leaves fitness undefined without reference tokens and makes CE infinite where q misses p's support", () => {
        const sums = emptyDivergenceSums();
        addPosition(sums, [0.5, 0.5], [1, 0], 2);
        const means = meanDivergences(sums);
        expect(means.fitness).toBeNull();
        expect(means.targetMisfit).toBeNull();
        expect(means.crossEntropy).toBe(Infinity);
        expect(means.alpha).toBeCloseTo(0.5, 12);
    });
});
