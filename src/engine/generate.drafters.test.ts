import {describe, expect, it} from "vitest";
import {InvalidDrafterError, TokenizerMismatchError} from "../errors.js";
import {chiSquareGoodnessOfFit} from "../statistics/chiSquareGoodnessOfFit.js";
import {createDrafter} from "./drafters/createDrafter.js";
import {SuffixDrafter} from "./drafters/SuffixDrafter.js";
import {generate} from "./generate.js";
import {BigramBackend} from "./testing/BigramBackend.js";
import {firstTwoTokensCell, firstTwoTokensDistribution} from "./testing/firstTwoTokens.js";

const target = BigramBackend.random(1, 8, {scale: 2, eosBias: -40});
const draft = target.noisyCopy(2, 1.0);
const prompts = [
    [0, 2, 3],
    [0, 5, 4, 5],
    [0, 7],
    [0, 3, 3, 6, 2]
];

describe("generation with each drafter", () => {
    it.each(["ngram", "ngram:1:3", "ngram:1:1:2", "suffix:1", "model", "ngram+model", "suffix:1+ngram:1:2", "ngram:3+suffix:1+model"])(
        "%s at temperature 0 emits exactly the target-only output, for every greedy-equivalent policy",
        async (drafter) => {
            let proposed = 0;
            for (const kind of ["strict", "greedy", "match", "typical"])
                for (const argmaxFastPath of [true, false]) {
                    // One instance per policy, so a suffix drafter sees the earlier prompts' outputs.
                    const instance = createDrafter(drafter, draft);
                    for (const prompt of prompts) {
                        const baseline = await generate(target, undefined, prompt, {sampling: {temperature: 0}, maxTokens: 40});
                        const result = await generate(
                            target,
                            undefined,
                            prompt,
                            {policy: {kind} as never, gamma: 4, sampling: {temperature: 0}, maxTokens: 40, argmaxFastPath},
                            {drafter: instance}
                        );
                        expect(result.tokens).toEqual(baseline.tokens);
                        expect(result.finishReason).toBe(baseline.finishReason);
                        proposed += result.telemetry.draftTokens;
                    }
                }
            expect(proposed).toBeGreaterThan(0);
        }
    );

    it("accepts a spec in the options, and `model` is the default when a draft is given", async () => {
        const options = {gamma: 3, maxTokens: 30, seed: 5, sampling: {temperature: 0.8}};
        const implicit = await generate(target, draft, [0, 2], options);
        const explicit = await generate(target, draft, [0, 2], {...options, drafter: "model"});
        expect(explicit.tokens).toEqual(implicit.tokens);
        expect(Object.keys(implicit.telemetry.toJSON().drafters)).toEqual(["model"]);
        const ngram = await generate(target, undefined, [0, 2, 3, 2, 3, 2], {...options, drafter: "ngram:1:2"});
        expect(Object.keys(ngram.telemetry.toJSON().drafters)).toEqual(["ngram:1:2"]);
    });

    it("names what is wrong with a spec, and a model drafter without a draft", async () => {
        await expect(generate(target, undefined, [0, 2], {drafter: "ngram:5:2"})).rejects.toThrow(InvalidDrafterError);
        await expect(generate(target, undefined, [0, 2], {drafter: "ngram+model"})).rejects.toThrow('drafter: "model" needs a draft model');
    });

    it("a model drafter refuses a draft whose vocabulary differs from the target's", async () => {
        const other = createDrafter("model", BigramBackend.random(3, 9));
        await expect(generate(target, undefined, [0, 2], {}, {drafter: other})).rejects.toThrow(TokenizerMismatchError);
    });

    it("counts lookups, proposals and accepted tokens per chain member", async () => {
        const result = await generate(target, draft, [0, 2, 3], {
            drafter: "ngram:1:2+model",
            gamma: 4,
            sampling: {temperature: 0},
            maxTokens: 60
        });
        const drafters = result.telemetry.toJSON().drafters;
        const ngram = drafters["ngram:1:2"];
        const model = drafters.model;
        expect(ngram.lookups).toBeGreaterThan(0);
        // The model is asked only when the n-gram finds nothing.
        expect(model.lookups).toBe(ngram.lookups - ngram.proposals);
        expect(ngram.proposals + model.proposals).toBe(result.telemetry.drafts);
        expect(ngram.draftTokens + model.draftTokens).toBe(result.telemetry.draftTokens);
        expect(ngram.acceptedTokens + model.acceptedTokens).toBe(result.telemetry.acceptedTokens);
        expect(ngram.draftedPerPosition.reduce((a, b) => a + b, 0)).toBe(ngram.draftTokens);
        expect(ngram.acceptedPerPosition.reduce((a, b) => a + b, 0)).toBe(ngram.acceptedTokens);
        expect(ngram.proposals).toBeGreaterThan(0);
        expect(model.proposals).toBeGreaterThan(0);
    });

    it("a suffix drafter learns from earlier generations that share its instance, and not otherwise", async () => {
        const options = {gamma: 4, sampling: {temperature: 0}, maxTokens: 30};
        const shared = new SuffixDrafter({kind: "suffix", minMatch: 1, minCount: 1, depth: 16, maxNodes: 10_000});
        const first = await generate(target, undefined, [0, 4], options, {drafter: shared});
        expect(first.telemetry.draftTokens).toBe(0);
        expect(shared.cache.documentCount).toBe(1);
        const second = await generate(target, undefined, [0, 4], options, {drafter: shared});
        expect(second.tokens).toEqual(first.tokens);
        expect(second.telemetry.acceptedTokens).toBeGreaterThan(0);
        expect(second.telemetry.steps).toBeLessThan(first.telemetry.steps);
        // A spec in the options builds a fresh drafter per generation: nothing is shared.
        const fresh = await generate(target, undefined, [0, 4], {...options, drafter: "suffix:1"});
        expect(fresh.telemetry.draftTokens).toBe(0);
    });

    it("every policy runs with q-less n-gram proposals at temperature 1", async () => {
        const policies = [
            {kind: "strict"},
            {kind: "greedy"},
            {kind: "match"},
            {kind: "typical"},
            {kind: "fuzzy", threshold: 0.4},
            {kind: "fuzzy", threshold: 0.4, distribution: "processed"},
            {kind: "calibrated", frequencyThreshold: 1},
            {kind: "lossy", tau: 0.1},
            {kind: "random", acceptanceProbability: 0.5}
        ];
        for (const policy of policies) {
            const result = await generate(target, draft, [0, 2, 3, 2, 3, 2, 3], {
                policy: policy as never,
                drafter: "ngram:1:3+model",
                gamma: 3,
                maxTokens: 40,
                seed: 2
            });
            expect(result.tokens.length).toBeGreaterThan(0);
            expect(result.telemetry.toJSON().drafters["ngram:1:3"].proposals).toBeGreaterThan(0);
        }
    });

    it("strict with q-less n-gram drafts emits the target's own distribution at temperature 1 (χ², 3000 seeds)", async () => {
        // The prompt's last token 4 occurred before, followed by 3: ngram:1:1 proposes [3] on the
        // first step, verified as q = δ_x.
        const prompt = [0, 4, 3, 4];
        const expected = firstTwoTokensDistribution(target, 4);
        const observed = new Float64Array(64);
        let proposed = 0;
        for (let seed = 0; seed < 3000; seed++) {
            const result = await generate(target, undefined, prompt, {drafter: "ngram:1:1", gamma: 2, maxTokens: 2, seed});
            proposed += result.telemetry.draftTokens;
            observed[firstTwoTokensCell(result, 8)]++;
        }
        expect(proposed).toBeGreaterThanOrEqual(3000);
        expect(chiSquareGoodnessOfFit(observed, expected).pValue).toBeGreaterThan(0.001);
    });
});
