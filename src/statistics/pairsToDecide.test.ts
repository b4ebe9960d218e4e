import {describe, expect, it} from "vitest";

import {pairedScoreEquivalence} from "./pairedScoreEquivalence.js";
import {pairsToDecide, samplesPerArmToDecide} from "./pairsToDecide.js";

/** The table of `pairs` pairs with the discordance rates of b and c flips out of `of`. */
function scaled(pairs: number, b: number, c: number, of: number) {
    return {bothPass: pairs - ((b + c) * pairs) / of, targetOnlyPass: (b * pairs) / of, speculativeOnlyPass: (c * pairs) / of, bothFail: 0};
}

describe("pairsToDecide", () => {
    it("finds the fewest pairs at which the observed discordance rates are shown equivalent", () => {
        const needed = pairsToDecide(200, 6, 6, 0.03, 0.05);
        expect(needed).toEqual({unit: "pairs", equivalence: 218, difference: null, decide: 218, alpha: 0.05});
        expect(pairedScoreEquivalence(scaled(218, 6, 6, 200), 0.03, 0.05).equivalent).toBe(true);
        expect(pairedScoreEquivalence(scaled(217, 6, 6, 200), 0.03, 0.05).equivalent).toBe(false);
        // Identical arms: the minimum pairs for equivalence, 99 at α = 0.05 and 126 at Holm's α/2.
        expect(pairsToDecide(40, 0, 0, 0.03, 0.05).equivalence).toBe(99);
        expect(pairsToDecide(40, 0, 0, 0.03, 0.025).equivalence).toBe(126);
    });

    it("counts the pairs a difference needs, and none for equivalence beyond the margin", () => {
        // 0 + 4 of 98: Tango's score at 0 is 2, so n·(1.6449 / 2)² = 66.3 → 67 pairs.
        expect(pairsToDecide(98, 0, 4, 0.03, 0.05)).toMatchObject({equivalence: null, difference: 67, decide: 67});
    });
});

describe("samplesPerArmToDecide", () => {
    it("uses the Wald arithmetic of the unpaired test, and gives nothing without spread", () => {
        // z²·(0.25 + 0.25) / 0.03² = 1,503.08 → 1,504 per arm.
        expect(samplesPerArmToDecide(0.5, 0.5, 0.03, 0.05)).toMatchObject({unit: "samples per arm", equivalence: 1504, difference: null});
        expect(samplesPerArmToDecide(1, 1, 0.03, 0.05)).toMatchObject({equivalence: null, difference: null, decide: null});
    });
});
