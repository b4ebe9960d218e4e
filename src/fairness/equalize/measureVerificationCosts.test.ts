import {describe, expect, it} from "vitest";
import type {BackendSequence, ModelBackend} from "../../backend/ModelBackend.js";
import {InvalidInputError} from "../../errors.js";
import {skewedBigramPair} from "../testing/skewedBigramPair.js";
import {measureVerificationCosts} from "./measureVerificationCosts.js";

/** A backend whose evaluations wait `perToken` ms per token, recording which evaluation path ran and the cache length after it. */
function slowed(backend: ModelBackend, perToken: number) {
    const calls: Array<{path: "logits" | "argmax"; tokens: number; positions: number; cached: number}> = [];
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
                    const rows = await inner.evaluate(tokens, options);
                    calls.push({path: "logits", tokens: tokens.length, positions: rows.length, cached: inner.tokens.length});
                    return rows;
                },
                async evaluateArgmax(tokens, options) {
                    await wait(tokens.length);
                    const ids = await inner.evaluateArgmax!(tokens, options);
                    calls.push({path: "argmax", tokens: tokens.length, positions: ids.length, cached: inner.tokens.length});
                    return ids;
                },
                rollback: (count) => inner.rollback(count),
                clear: () => inner.clear(),
                dispose: () => inner.dispose()
            };
        }
    });
    return {backend: wrapped, calls};
}

describe("measureVerificationCosts", () => {
    it("measures t_T(k) growing with the batch and a cheap draft token, always from the same cache length", async () => {
        const pair = skewedBigramPair(5);
        const target = slowed(pair.target, 4);
        const draft = slowed(pair.draft, 0);
        const costs = await measureVerificationCosts(target.backend, draft.backend, {largestBatch: 4, context: [0, 7, 8, 9], argmaxOnly: true, repetitions: 3});
        expect(costs.targetMilliseconds).toHaveLength(4);
        // 4 ms per token: t_T(4) − t_T(1) ≈ 12 ms, well above timer jitter.
        expect(costs.targetMilliseconds[3] - costs.targetMilliseconds[0]).toBeGreaterThan(8);
        expect(costs.draftMilliseconds).toBeGreaterThan(0);
        expect(costs.draftMilliseconds).toBeLessThan(costs.targetMilliseconds[0]);
        // The context once, then an untimed pass and 3 timed ones over k = 1..4, every row requested, each rolled back.
        const [context, ...batches] = target.calls;
        expect(context).toMatchObject({path: "logits", tokens: 4, positions: 0});
        expect(batches.map((call) => call.tokens)).toEqual(Array.from({length: 4}, () => [1, 2, 3, 4]).flat());
        expect(batches.every((call) => call.path === "argmax" && call.positions === call.tokens && call.cached === 4 + call.tokens)).toBe(true);
        expect(draft.calls.slice(1).every((call) => call.path === "argmax" && call.tokens === 1 && call.cached === 5)).toBe(true);
    });

    it("asks for logit rows when not at temperature 0", async () => {
        const pair = skewedBigramPair(5);
        const target = slowed(pair.target, 0);
        await measureVerificationCosts(target.backend, pair.draft, {largestBatch: 2, context: [0, 7], argmaxOnly: false, repetitions: 1});
        expect(target.calls.slice(1).map((call) => [call.path, call.positions])).toEqual([["logits", 1], ["logits", 2], ["logits", 1], ["logits", 2]]);
    });

    it("rejects an empty context, a context with no room for the largest batch and a bad batch size", async () => {
        const {target, draft} = skewedBigramPair(5);
        await expect(measureVerificationCosts(target, draft, {largestBatch: 2, context: [], argmaxOnly: true})).rejects.toThrow(/context: is empty/);
        await expect(measureVerificationCosts(target, draft, {largestBatch: 9, context: Array.from({length: 505}, () => 7), argmaxOnly: true}))
            .rejects.toThrow(/leaves room for 7 more tokens/);
        await expect(measureVerificationCosts(target, draft, {largestBatch: 0, context: [0], argmaxOnly: true})).rejects.toThrow(InvalidInputError);
    });
});
