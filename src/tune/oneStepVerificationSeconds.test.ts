import {describe, expect, it} from "vitest";
import {oneStepVerificationSeconds, stepCostsOf} from "./oneStepVerificationSeconds.js";

describe("oneStepVerificationSeconds", () => {
    const costs = stepCostsOf(
        {emittedTokens: 100, decodeSeconds: 2, acceptedTokens: 0, draftTokens: 0},
        {emittedTokens: 100, decodeSeconds: 0.5, acceptedTokens: 0, draftTokens: 0}
    )!;

    it("measures t_T(1) and t_D per emitted token", () => {
        expect(costs).toEqual({targetStepSeconds: 0.02, draftStepSeconds: 0.005});
    });

    it("charges one target step per verification and one draft step per proposed token", () => {
        // 100 tokens in 25 verifications (75 accepted), 100 drafted: 25·0.02 + 100·0.005 = 1.0 s.
        expect(oneStepVerificationSeconds({emittedTokens: 100, decodeSeconds: 9, acceptedTokens: 75, draftTokens: 100}, costs)).toBeCloseTo(
            1.0,
            12
        );
    });

    it("gives the single-model rows their measured time", () => {
        expect(oneStepVerificationSeconds({emittedTokens: 100, decodeSeconds: 2, acceptedTokens: 0, draftTokens: 0}, costs)).toBeCloseTo(
            2,
            12
        );
        expect(
            oneStepVerificationSeconds({emittedTokens: 100, decodeSeconds: 0.5, acceptedTokens: 0, draftTokens: 0}, costs, "draft")
        ).toBeCloseTo(0.5, 12);
    });

    it("has no costs when a baseline emitted nothing", () => {
        expect(
            stepCostsOf(
                {emittedTokens: 0, decodeSeconds: 0, acceptedTokens: 0, draftTokens: 0},
                {emittedTokens: 1, decodeSeconds: 1, acceptedTokens: 0, draftTokens: 0}
            )
        ).toBeNull();
    });
});
