import {afterEach, beforeEach, describe, expect, it, vi} from "vitest";
import type {BackendSequence, ModelBackend} from "../../backend/ModelBackend.js";
import {InvalidInputError} from "../../errors.js";
import {skewedBigramPair} from "../testing/skewedBigramPair.js";
import {measureVerificationCosts} from "./measureVerificationCosts.js";

const greedy = {temperature: 0, topK: 0, topP: 1, minP: 0};

/**
 * A backend whose evaluations take `perToken` ms per token on the test's fake clock (performance.now
 * moves by exactly that much, whatever the machine's load), recording the size of every argmax evaluation.
 */
function slowed(backend: ModelBackend, perToken: number) {
    const argmaxBatches: number[] = [];
    const wrapped: ModelBackend = Object.assign(Object.create(backend) as ModelBackend, {
        async createSequence(): Promise<BackendSequence> {
            const inner = await backend.createSequence();
            const wait = async (tokens: number): Promise<void> => {
                vi.advanceTimersByTime(perToken * tokens);
            };
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
    // Only performance.now is faked: the engine's event-loop turns (setImmediate) stay real.
    beforeEach(() => {
        vi.useFakeTimers({toFake: ["performance"]});
    });
    afterEach(() => {
        vi.useRealTimers();
    });

    it("times every verification size 1..γ+1 and a draft token from real strict runs", async () => {
        const pair = skewedBigramPair(5);
        const target = slowed(pair.target, 3);
        const draft = slowed(pair.draft, 1);
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
        // 3 ms per target token and 1 ms per draft token, on a clock nothing else moves.
        expect(costs).toEqual({targetMilliseconds: [3, 6, 9, 12], draftMilliseconds: 1});
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
