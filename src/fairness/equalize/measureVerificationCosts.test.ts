import {describe, expect, it} from "vitest";
import type {BackendSequence, ModelBackend} from "../../backend/ModelBackend.js";
import {InvalidInputError} from "../../errors.js";
import {skewedBigramPair} from "../testing/skewedBigramPair.js";
import {measureVerificationCosts} from "./measureVerificationCosts.js";

const greedy = {temperature: 0, topK: 0, topP: 1, minP: 0};

/** A backend whose evaluations wait `perToken` ms per token, recording the size of every argmax evaluation. */
function slowed(backend: ModelBackend, perToken: number) {
    const argmaxBatches: number[] = [];
    const wrapped: ModelBackend = Object.assign(Object.create(backend) as ModelBackend, {
        async createSequence(): Promise<BackendSequence> {
            const inner = await backend.createSequence();
            const wait = (tokens: number) => new Promise((resolve) => setTimeout(resolve, perToken * tokens));
            return {
                get tokens() {
                    return inner.tokens;
                },
                async evaluate(tokens, options) {
                    await wait(tokens.length);
                    return inner.evaluate(tokens, options);
                },
                async evaluateArgmax(tokens, options) {
                    await wait(tokens.length);
                    argmaxBatches.push(tokens.length);
                    return inner.evaluateArgmax!(tokens, options);
                },
                rollback: (count) => inner.rollback(count),
                clear: () => inner.clear(),
                dispose: () => inner.dispose()
            };
        }
    });
    return {backend: wrapped, argmaxBatches};
}

describe("measureVerificationCosts", () => {
    it("times every verification size 1..γ+1 from real strict runs, and a draft token cheaper than the target's", async () => {
        const pair = skewedBigramPair(5);
        const target = slowed(pair.target, 3);
        const draft = slowed(pair.draft, 0);
        // Prompts on the well-served side (every draft accepted) and the other (every draft rejected).
        const costs = await measureVerificationCosts(target.backend, draft.backend, {
            maxGamma: 3,
            prompts: [
                [7, 8],
                [2, 3]
            ],
            sampling: greedy,
            maxTokens: 8
        });
        expect(costs.targetMilliseconds).toHaveLength(4);
        // 3 ms per token: t_T(4) − t_T(1) ≈ 9 ms, well above timer jitter.
        expect(costs.targetMilliseconds[3] - costs.targetMilliseconds[0]).toBeGreaterThan(5);
        expect(costs.draftMilliseconds).toBeGreaterThan(0);
        expect(costs.draftMilliseconds).toBeLessThan(costs.targetMilliseconds[0]);
        // Verification batches of every size up to γ + 1 = 4 ran on the target, none larger.
        expect(new Set(target.argmaxBatches)).toEqual(new Set([1, 2, 3, 4]));
    });

    it("rejects a bad γ range, no prompts and runs too long for the context", async () => {
        const {target, draft} = skewedBigramPair(5);
        await expect(measureVerificationCosts(target, draft, {maxGamma: 0, prompts: [[7]], sampling: greedy})).rejects.toThrow(
            InvalidInputError
        );
        await expect(measureVerificationCosts(target, draft, {maxGamma: 2, prompts: [], sampling: greedy})).rejects.toThrow(
            /prompts: has no prompts/
        );
        await expect(
            measureVerificationCosts(target, draft, {maxGamma: 2, prompts: [[7]], sampling: greedy, maxTokens: 510})
        ).rejects.toThrow(/maxTokens: 510 tokens per run leave no room for a prompt in a 512-token context/);
    });
});
