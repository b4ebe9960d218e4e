import {describe, expect, it} from "vitest";
import {InvalidInputError, TokenizerMismatchError} from "../errors.js";
import {chiSquareGoodnessOfFit} from "../statistics/chiSquareGoodnessOfFit.js";
import {DraftLengthController} from "./DraftLengthController.js";
import {createDrafter} from "./drafters/createDrafter.js";
import type {Drafter} from "./drafters/Drafter.js";
import {generate, streamGeneration} from "./generate.js";
import {BigramBackend} from "./testing/BigramBackend.js";
import {firstTwoTokensCell, firstTwoTokensDistribution} from "./testing/firstTwoTokens.js";
import {GenerationTelemetry} from "./GenerationTelemetry.js";
import {SpeculationLoad} from "./SpeculationLoad.js";
import {presetSpeculationLoad} from "./testing/presetSpeculationLoad.js";

const target = BigramBackend.random(1, 8, {scale: 2});
const draft = target.noisyCopy(2, 1.0);

describe("speculative generation on a bigram backend", () => {
    it.each(["strict", "greedy", "match", "typical"])("%s at temperature 0 reproduces target-only greedy exactly", async (kind) => {
        const baseline = await generate(target, undefined, [0, 2, 3], {sampling: {temperature: 0}, maxTokens: 40});
        const speculative = await generate(target, draft, [0, 2, 3], {
            policy: {kind} as never,
            gamma: 4,
            sampling: {temperature: 0},
            maxTokens: 40
        });
        expect(speculative.tokens).toEqual(baseline.tokens);
        expect(speculative.finishReason).toBe(baseline.finishReason);
        expect(speculative.telemetry.acceptedTokens).toBeGreaterThan(0);
    });

    it("the argmax fast path and the full-logits path agree at temperature 0 for every greedy-equivalent policy", async () => {
        for (const kind of ["greedy", "strict", "match", "typical"]) {
            const options = {policy: {kind} as never, gamma: 3, sampling: {temperature: 0}, maxTokens: 30};
            const fast = await generate(target, draft, [0, 5], {...options, argmaxFastPath: true});
            const full = await generate(target, draft, [0, 5], {...options, argmaxFastPath: false});
            expect(fast.tokens).toEqual(full.tokens);
        }
    });

    it("makes exactly one target evaluation per step, of at most γ+1 tokens", async () => {
        const counted = BigramBackend.random(1, 8, {scale: 2});
        const result = await generate(counted, counted.noisyCopy(2, 1), [0, 2], {gamma: 3, maxTokens: 30, seed: 4});
        // Both models share this backend object's counter only if they are the same object; here the
        // target is `counted`: one prompt-head call (the BOS-less prompt has 2 tokens) plus one per step.
        expect(counted.evaluateCalls.length).toBe(1 + result.telemetry.steps);
        expect(Math.max(...counted.evaluateCalls.slice(1))).toBeLessThanOrEqual(4);
        expect(result.telemetry.emittedTokens).toBeGreaterThanOrEqual(result.tokens.length);
    });

    it("at temperature 1, strict and match emit the target's own distribution for the first two tokens (χ², 3000 seeds)", async () => {
        const prompt = [0, 4];
        const expected = firstTwoTokensDistribution(target, 4);
        for (const kind of ["strict", "match"]) {
            const observed = new Float64Array(64);
            for (let seed = 0; seed < 3000; seed++)
                observed[
                    firstTwoTokensCell(await generate(target, draft, prompt, {policy: {kind} as never, gamma: 3, maxTokens: 2, seed}), 8)
                ]++;
            expect(chiSquareGoodnessOfFit(observed, expected).pValue).toBeGreaterThan(0.001);
        }
    });

    it("draftLength auto at temperature 0 reproduces target-only greedy, on measured costs and on costs that make it skip and draft", async () => {
        const baseline = await generate(target, undefined, [0, 2, 3], {sampling: {temperature: 0}, maxTokens: 40});
        for (const load of [
            undefined,
            new SpeculationLoad(),
            presetSpeculationLoad(0.1),
            presetSpeculationLoad(0.6),
            presetSpeculationLoad(3)
        ])
            for (const argmaxFastPath of [true, false]) {
                const auto = await generate(
                    target,
                    draft,
                    [0, 2, 3],
                    {draftLength: "auto", maxGamma: 6, sampling: {temperature: 0}, maxTokens: 40, argmaxFastPath},
                    {speculationLoad: load}
                );
                expect(auto.tokens).toEqual(baseline.tokens);
                expect(auto.telemetry.draftLengths.steps).toBeGreaterThan(0);
                expect(Math.max(...auto.telemetry.draftLengths.counts.keys())).toBeLessThanOrEqual(6);
            }
    });

    it("draftLength auto: strict and match emit the target's own distribution for the first two tokens while the length varies (χ², 3000 seeds)", async () => {
        const prompt = [0, 4];
        const expected = firstTwoTokensDistribution(target, 4);
        for (const kind of ["strict", "match"]) {
            // Preset costs: the lengths follow the acceptance of earlier generations (the load's prior), not the machine's timing.
            const load = presetSpeculationLoad(0.8);
            const lengths = new GenerationTelemetry();
            const observed = new Float64Array(64);
            for (let seed = 0; seed < 3000; seed++) {
                const result = await generate(
                    target,
                    draft,
                    prompt,
                    {policy: {kind} as never, draftLength: "auto", gamma: 3, maxTokens: 2, seed},
                    {speculationLoad: load}
                );
                lengths.merge(result.telemetry);
                observed[firstTwoTokensCell(result, 8)]++;
            }
            expect(lengths.draftLengths.counts[0], kind).toBeGreaterThan(0);
            expect(lengths.draftLengths.counts[1], kind).toBeGreaterThan(0);
            expect(chiSquareGoodnessOfFit(observed, expected).pValue, kind).toBeGreaterThan(0.001);
        }
    });

    it("draftLength auto opens the draft model at its first draft: a generation that never drafts makes target-only's calls and none on the draft", async () => {
        const counted = BigramBackend.random(1, 8, {scale: 2});
        const countedDraft = counted.noisyCopy(2, 1);
        const options = {gamma: 3, sampling: {temperature: 0}, maxTokens: 30, firstTokenFromPrompt: true};
        const plain = await generate(counted, undefined, [0, 2, 5], {...options, gamma: 0});
        const plainCalls = counted.evaluateCalls.splice(0);
        /** A generation with draftLength auto on preset costs: a target step of n tokens costs 1 + slope·(n − 1). */
        const auto = (slope: number) =>
            generate(counted, countedDraft, [0, 2, 5], {...options, draftLength: "auto"}, {speculationLoad: presetSpeculationLoad(slope)});
        // Preset costs where a verified token costs as much as a generated one: no draft ever pays, and no probe is spent.
        const never = await auto(1);
        expect(never.telemetry.draftLengths.skipped).toBe(never.telemetry.draftLengths.steps);
        expect(countedDraft.evaluateCalls).toEqual([]);
        expect(counted.evaluateCalls.splice(0)).toEqual(plainCalls);
        expect(never.tokens).toEqual(plain.tokens);
        // Where drafting pays, the session opens at the first draft (the second step here) and reads the history but its pending token in one call.
        const drafting = await auto(0.1);
        expect(drafting.telemetry.draftTokens).toBeGreaterThan(0);
        expect(countedDraft.evaluateCalls[0]).toBe(3);
        expect(drafting.tokens).toEqual(plain.tokens);
    });

    it("with firstTokenFromPrompt, the prompt's own row gives the first token before any draft, and strict stays exact", async () => {
        const counted = BigramBackend.random(1, 8, {scale: 2});
        const countedDraft = counted.noisyCopy(2, 1);
        const stream = streamGeneration(counted, countedDraft, [0, 2, 5], {gamma: 3, maxTokens: 30, seed: 4, firstTokenFromPrompt: true});
        const first = await stream.next();
        // One target call for the whole prompt and the first token; the draft model has not run yet.
        expect(first.done).toBe(false);
        expect(counted.evaluateCalls).toEqual([3]);
        expect(countedDraft.evaluateCalls).toEqual([]);
        if (!first.done) expect(first.value.verification?.emitted).toHaveLength(1);
        let last = await stream.next();
        while (!last.done) last = await stream.next();
        expect(last.value.telemetry.draftTokens).toBeGreaterThan(0);
        expect(Math.max(...counted.evaluateCalls.slice(1))).toBeLessThanOrEqual(4);

        // T = 0: target-only greedy, for every greedy-equivalent policy.
        const baseline = await generate(target, undefined, [0, 2, 3], {sampling: {temperature: 0}, maxTokens: 40});
        for (const kind of ["strict", "greedy"]) {
            const speculative = await generate(target, draft, [0, 2, 3], {
                policy: {kind} as never,
                gamma: 4,
                sampling: {temperature: 0},
                maxTokens: 40,
                firstTokenFromPrompt: true
            });
            expect(speculative.tokens).toEqual(baseline.tokens);
        }
        // T = 1: the first two tokens follow the target's distribution; the second comes from a verified draft.
        const expected = firstTwoTokensDistribution(target, 4);
        const observed = new Float64Array(64);
        let drafted = 0;
        for (let seed = 0; seed < 3000; seed++) {
            const result = await generate(target, draft, [0, 4], {
                policy: {kind: "strict"},
                gamma: 3,
                maxTokens: 3,
                seed,
                firstTokenFromPrompt: true
            });
            drafted += result.telemetry.draftTokens;
            observed[firstTwoTokensCell(result, 8)]++;
        }
        expect(drafted).toBeGreaterThan(2000);
        expect(chiSquareGoodnessOfFit(observed, expected).pValue).toBeGreaterThan(0.001);
    });

    it("fuzzy with a loose threshold accepts more than strict (and reports it)", async () => {
        const strict = await generate(target, draft, [0, 2], {policy: {kind: "strict"}, gamma: 4, maxTokens: 60, seed: 1});
        const fuzzy = await generate(target, draft, [0, 2], {policy: {kind: "fuzzy", threshold: 0.6}, gamma: 4, maxTokens: 60, seed: 1});
        expect(fuzzy.telemetry.acceptanceRate).toBeGreaterThan(strict.telemetry.acceptanceRate);
    });

    it("streams chunks whose text concatenates to the final text", async () => {
        const stream = streamGeneration(target, draft, "abc", {maxTokens: 25, seed: 3});
        let text = "";
        let next = await stream.next();
        while (!next.done) {
            text += next.value.text;
            next = await stream.next();
        }
        expect(text).toBe(next.value.text);
        expect(next.value.tokens.length).toBeLessThanOrEqual(25);
    });

    it("stops at EOS (not emitted), at max tokens, and at a stop string (cut before it)", async () => {
        const eosHeavy = BigramBackend.random(5, 8, {eosBias: 3});
        const eos = await generate(eosHeavy, undefined, [0, 2], {maxTokens: 200, seed: 1});
        expect(eos.finishReason).toBe("eos");
        expect(eos.tokens).not.toContain(1);
        // ignore_eos: generation runs through EOS (emitted as a token) to max tokens.
        const through = await generate(eosHeavy, undefined, [0, 2], {maxTokens: 200, seed: 1, ignoreEos: true});
        expect(through.finishReason).toBe("length");
        expect(through.tokens).toHaveLength(200);
        expect(through.tokens.slice(0, eos.tokens.length + 1)).toEqual([...eos.tokens, 1]);
        const length = await generate(target, draft, [0, 2], {maxTokens: 7, seed: 1, sampling: {temperature: 0}});
        expect(length.tokens).toHaveLength(7);
        expect(length.finishReason).toBe("length");
        const full = await generate(target, undefined, [0, 2], {maxTokens: 40, sampling: {temperature: 0}});
        const stopString = full.text.slice(5, 7);
        const stopped = await generate(target, draft, [0, 2], {maxTokens: 40, sampling: {temperature: 0}, stop: [stopString]});
        expect(stopped.finishReason).toBe("stop");
        expect(stopped.text).toBe(full.text.slice(0, full.text.indexOf(stopString)));
        // The same tokens as target-only decoding with the stop: up to the token completing the stop string.
        const stoppedBaseline = await generate(target, undefined, [0, 2], {maxTokens: 40, sampling: {temperature: 0}, stop: [stopString]});
        expect(stopped.tokens).toEqual(stoppedBaseline.tokens);
    });

    it("refuses an empty prompt without BOS, a prompt longer than the context, and mismatched tokenizers", async () => {
        await expect(generate(target, undefined, "", {addBos: false})).rejects.toThrow(InvalidInputError);
        const small = BigramBackend.random(1, 8, {contextSize: 4});
        await expect(generate(small, undefined, [0, 2, 3, 4, 5])).rejects.toThrow(/prompt: has 5 tokens; the context holds 4/);
        const other = new BigramBackend(target.table, 512, "another-vocabulary");
        await expect(generate(target, other, [0, 2])).rejects.toThrow(TokenizerMismatchError);
        await expect(generate(target, draft, [0, 2], {gamma: -1})).rejects.toThrow(/gamma/);
        await expect(generate(target, draft, [0, 2], {temperatur: 0} as never)).rejects.toThrow(/unknown option "temperatur"/);
    });

    it("finishes with reason length when the context is full", async () => {
        const small = BigramBackend.random(1, 8, {contextSize: 12, eosBias: -50});
        const result = await generate(small, small.noisyCopy(3, 0.5), [0, 2], {maxTokens: 100, gamma: 4, seed: 2});
        expect(result.finishReason).toBe("length");
        expect(result.promptTokens + result.tokens.length).toBeLessThanOrEqual(13);
    });

    it("minConfidence stops drafting early; the +2/−1 schedule adapts γ", async () => {
        const confident = await generate(target, draft, [0, 2], {gamma: 8, minConfidence: 0.99, maxTokens: 30, seed: 1});
        expect(confident.telemetry.draftTokens).toBeLessThan(8 * confident.telemetry.steps);
        const controller = new DraftLengthController({mode: "schedule", gamma: 4, maxGamma: 8, minConfidence: 0});
        controller.observe(4, 4);
        expect(controller.next).toBe(6);
        controller.observe(6, 6);
        controller.observe(8, 8);
        expect(controller.next).toBe(8);
        controller.observe(8, 2);
        expect(controller.next).toBe(7);
        const fixed = new DraftLengthController({mode: "fixed", gamma: 4, maxGamma: 4, minConfidence: 0});
        fixed.observe(4, 4);
        expect(fixed.next).toBe(4);
    });

    it("telemetry follows vLLM's definitions, counted apart from the telemetry by watching the drafter and the verifications", async () => {
        // The proposals as the drafter made them, and the accepted counts as each step's verification decided them.
        const model = createDrafter("model", draft);
        const proposed: number[] = [];
        const watched: Drafter = {
            ...model,
            start: async (start) => {
                const session = await model.start(start);
                return {
                    ...session,
                    propose: async (request) => {
                        const proposal = await session.propose(request);
                        proposed.push(proposal.tokens.length);
                        return proposal;
                    }
                };
            }
        };
        const generator = streamGeneration(target, draft, [0, 2], {gamma: 4, maxTokens: 50, seed: 9}, {drafter: watched});
        let accepted = 0;
        let next = await generator.next();
        for (; !next.done; next = await generator.next()) accepted += next.value.verification?.acceptedCount ?? 0;
        const telemetry = next.value.telemetry;
        const drafts = proposed.filter((length) => length > 0).length;
        const draftTokens = proposed.reduce((sum, length) => sum + length, 0);
        expect(drafts).toBeGreaterThan(3);
        expect([telemetry.drafts, telemetry.draftTokens, telemetry.acceptedTokens]).toEqual([drafts, draftTokens, accepted]);
        expect(telemetry.acceptanceRate).toBeCloseTo(accepted / draftTokens, 12);
        expect(telemetry.meanAcceptanceLength).toBeCloseTo(1 + accepted / drafts, 12);
        expect(telemetry.acceptedPerPosition.reduce((sum, count) => sum + count, 0)).toBe(accepted);
        expect(Object.keys(telemetry.costCurve()).map(Number)).toContain(5);
        // Catch-up batches (after a fully accepted step) count as draft model time but not towards t_draft.
        expect(telemetry.draftModelMilliseconds).toBeGreaterThanOrEqual(telemetry.draftEvaluations[0]);
        expect(telemetry.overheadShare).toBeGreaterThanOrEqual(0);
        expect(telemetry.overheadShare).toBeLessThanOrEqual(1);
    });
});
