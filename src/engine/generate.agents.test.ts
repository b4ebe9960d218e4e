import {describe, expect, it} from "vitest";
import {ParityConstraint} from "../constraints/testing/ParityConstraint.js";
import {parsePolicySpec} from "../policies/parsePolicySpec.js";
import {processLogits} from "../distributions/processLogits.js";
import {chiSquareGoodnessOfFit} from "../statistics/chiSquareGoodnessOfFit.js";
import {generate, streamGeneration} from "./generate.js";
import {BigramBackend} from "./testing/BigramBackend.js";
import {firstTwoTokensCell} from "./testing/firstTwoTokens.js";

const target = BigramBackend.random(11, 8, {scale: 2});
const draft = target.noisyCopy(12, 1.0);
const eos = 1;
const firstForbidden = new Set([2, 5]);
const parity = (): ParityConstraint => new ParityConstraint(eos, firstForbidden);

/** A row masked by what ParityConstraint allows after `last`, as a sampler row at temperature 1. */
function maskedRow(after: number, last: number | undefined): Float64Array {
    const row = target.table[after].slice();
    const state = new ParityConstraint(eos, firstForbidden, last);
    // ParityConstraint masks before its promise is returned.
    void state.maskLogits(row);
    state.dispose();
    return processLogits(row);
}

/** The constrained target's joint distribution of the first two tokens after a prompt ending in `lastPromptToken`. */
function constrainedFirstTwo(lastPromptToken: number): Float64Array {
    const size = target.vocabularySize;
    const first = maskedRow(lastPromptToken, undefined);
    const expected = new Float64Array(size * size);
    for (let a = 0; a < size; a++) {
        if (first[a] === 0) continue;
        if (a === eos) {
            expected[eos * size + eos] += first[a];
            continue;
        }
        const second = maskedRow(a, a);
        for (let b = 0; b < size; b++) expected[a * size + b] += first[a] * second[b];
    }
    return expected;
}

function satisfiesParity(tokens: readonly number[]): boolean {
    return tokens.every((token, index) =>
        index === 0 ? !firstForbidden.has(token) : token !== eos && token % 2 !== tokens[index - 1] % 2
    );
}

describe("generation under a token constraint", () => {
    it("strict with draft rows and target-only sampling both follow the constrained target exactly (χ², 3000 seeds each)", async () => {
        const prompt = [0, 4];
        const expected = constrainedFirstTwo(4);
        for (const gamma of [0, 3]) {
            const observed = new Float64Array(64);
            for (let seed = 0; seed < 3000; seed++) {
                const constraint = parity();
                const result = await generate(target, draft, prompt, {gamma, maxTokens: 2, seed}, {constraint});
                constraint.dispose();
                observed[firstTwoTokensCell(result, 8)]++;
            }
            expect(chiSquareGoodnessOfFit(observed, expected).pValue).toBeGreaterThan(0.001);
        }
    });

    it("the unconstrained output differs from the constrained distribution (the χ² test can fail)", async () => {
        const observed = new Float64Array(64);
        for (let seed = 0; seed < 3000; seed++)
            observed[firstTwoTokensCell(await generate(target, draft, [0, 4], {gamma: 3, maxTokens: 2, seed}), 8)]++;
        expect(chiSquareGoodnessOfFit(observed, constrainedFirstTwo(4)).pValue).toBeLessThan(1e-6);
    });

    it.each(["strict", "greedy", "match", "fuzzy:js:0.9", "typical"])(
        "every %s output satisfies the constraint, drafts included",
        async (policy) => {
            for (let seed = 0; seed < 40; seed++) {
                const constraint = parity();
                const result = await generate(
                    target,
                    draft,
                    [0, 3],
                    {policy: parsePolicySpec(policy), gamma: 4, maxTokens: 24, seed},
                    {constraint}
                );
                constraint.dispose();
                expect(satisfiesParity(result.tokens), `seed ${seed}: ${result.tokens.join(",")}`).toBe(true);
            }
            expect(ParityConstraint.live).toBe(0);
        }
    );

    it("at temperature 0, constrained speculation reproduces constrained target-only greedy decoding", async () => {
        const run = async (gamma: number): Promise<number[]> => {
            const constraint = parity();
            const result = await generate(target, draft, [0, 6], {gamma, maxTokens: 30, sampling: {temperature: 0}}, {constraint});
            constraint.dispose();
            return result.tokens;
        };
        const baseline = await run(0);
        expect(satisfiesParity(baseline)).toBe(true);
        expect(await run(4)).toEqual(baseline);
    });
});

describe("log-probabilities", () => {
    it("are the target's log-softmax at each emitted position, identical with and without speculation at temperature 0", async () => {
        const collect = async (gamma: number) => {
            const entries = [];
            const stream = streamGeneration(target, draft, [0, 3], {gamma, maxTokens: 20, sampling: {temperature: 0}, logprobs: 3});
            for (;;) {
                const next = await stream.next();
                if (next.done) return {entries, tokens: next.value.tokens};
                expect(next.value.logprobs).toHaveLength(next.value.tokens.length);
                entries.push(...next.value.logprobs!);
            }
        };
        const plain = await collect(0);
        const speculative = await collect(4);
        expect(speculative.tokens).toEqual(plain.tokens);
        expect(speculative.entries).toEqual(plain.entries);
        const history = [3, ...plain.tokens];
        plain.entries.forEach((entry, index) => {
            const probabilities = processLogits(target.table[history[index]]);
            expect(entry.token).toBe(plain.tokens[index]);
            expect(entry.logprob).toBeCloseTo(Math.log(probabilities[entry.token]), 12);
            expect(entry.top).toHaveLength(3);
            expect(entry.top[0].logprob).toBeGreaterThanOrEqual(entry.top[1].logprob);
            expect(entry.top[1].logprob).toBeGreaterThanOrEqual(entry.top[2].logprob);
            // At temperature 0 the emitted token is the most likely one.
            expect(entry.top[0].token).toBe(entry.token);
        });
    });
});

describe("prompt caching with a lent sequence", () => {
    it("decodes only what the sequence does not hold, and generates as a fresh sequence would", async () => {
        const counted = BigramBackend.random(11, 8, {scale: 2});
        const sequence = await counted.createSequence();
        const prompt = [0, 3, 5, 2, 6, 4];
        const options = {gamma: 0, maxTokens: 6, seed: 9, firstTokenFromPrompt: true};
        const first = await generate(counted, undefined, prompt, options, {sequence});
        expect(first.telemetry.cachedPromptTokens).toBe(0);
        expect(sequence.tokens.slice(0, prompt.length)).toEqual(prompt);
        // A follow-up prompt that repeats the first prompt and its reply, then adds a token.
        const followUp = [...prompt, ...first.tokens, 7];
        counted.evaluateCalls.length = 0;
        const cached = await generate(counted, undefined, followUp, options, {sequence});
        expect(cached.telemetry.cachedPromptTokens).toBe(prompt.length + first.tokens.length - 1);
        // The prompt step decoded the uncached tail only: the last reply token (never decoded) and the new one.
        expect(counted.evaluateCalls[0]).toBe(2);
        const fresh = await generate(counted, undefined, followUp, options);
        expect(cached.tokens).toEqual(fresh.tokens);
        // A prompt sharing only a prefix: the rest is rolled back.
        const branch = await generate(counted, undefined, [0, 3, 5, 7], options, {sequence});
        expect(branch.telemetry.cachedPromptTokens).toBe(3);
        expect(branch.tokens).toEqual((await generate(counted, undefined, [0, 3, 5, 7], options)).tokens);
        await sequence.dispose();
    });

    it("reuses a lent draft sequence for the model drafter", async () => {
        const sequence = await target.createSequence();
        const draftSequence = await draft.createSequence();
        const options = {gamma: 3, maxTokens: 10, seed: 3, firstTokenFromPrompt: true};
        const prompt = [0, 3, 5, 2];
        const first = await generate(target, draft, prompt, options, {sequence, draftSequence});
        expect(draftSequence.tokens.slice(0, prompt.length - 1)).toEqual(prompt.slice(0, -1));
        const again = await generate(target, draft, [...prompt, ...first.tokens], options, {sequence, draftSequence});
        const fresh = await generate(target, draft, [...prompt, ...first.tokens], options);
        expect(again.tokens).toEqual(fresh.tokens);
        expect(again.telemetry.cachedPromptTokens).toBeGreaterThan(prompt.length);
        await sequence.dispose();
        await draftSequence.dispose();
    });
});
