import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {loadModelBackend} from "../backend/loadModelBackend.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {InvalidInputError} from "../errors.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {jointLawTest} from "../testing/jointLawTest.js";
import {generate} from "./generate.js";
import {presetSpeculationLoad} from "./testing/presetSpeculationLoad.js";

vi.setConfig(modelTestTimeouts);

/**
 * Token trees through the engine on the shipped family pair (native backend): at T = 0 the output is
 * target-only greedy decoding's, token for token; at T = 1 the first three tokens follow the target's
 * own joint law (χ² against its enumeration; recursive rejection sampling is proven exact by
 * enumeration in src/policies/treeVerification.test.ts).
 */
const targetPath = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const draftPath = new URL("../../models/draft/model.gguf", import.meta.url).pathname;

let target: ModelBackend;
let draft: ModelBackend;
beforeAll(async () => {
    target = await loadModelBackend(targetPath, {threads: 1, backend: "native", gpu: "off"});
    draft = await loadModelBackend(draftPath, {threads: 1, backend: "native", gpu: "off"});
});
afterAll(async () => {
    await draft?.dispose();
    await target?.dispose();
});

const greedy = {temperature: 0, topK: 0, topP: 1, minP: 0};

describe("token trees in generate (family pair)", () => {
    it.each([
        {tree: {width: 2, depth: 4}, prompt: "Question: Tom has 3 apples and buys 4 more. How many apples does he have?\nAnswer:"},
        {tree: {width: 3, depth: 3}, prompt: "The"},
        {tree: {width: 4, depth: 1}, prompt: "Once upon a time"}
    ])("T = 0, tree $tree.width x $tree.depth: the output is target-only greedy decoding's", async ({tree, prompt}) => {
        const options = {sampling: greedy, maxTokens: 48, ignoreEos: true};
        const reference = await generate(target, undefined, prompt, {...options, gamma: 0});
        const result = await generate(target, draft, prompt, {...options, tree});
        expect(result.tokens).toEqual(reference.tokens);
        expect(result.telemetry.emittedTokens / result.telemetry.steps).toBeGreaterThan(1.5);
        expect(result.telemetry.draftTokens).toBeGreaterThan(0);
    });

    it("T = 0, draftLength auto chooses the depth of a 2-wide tree (0 to 4) and the output is target-only greedy decoding's", async () => {
        const options = {sampling: greedy, maxTokens: 40, ignoreEos: true};
        const prompt = "Once upon a time";
        const reference = await generate(target, undefined, prompt, {...options, gamma: 0});
        // Measured costs, and preset ones on which a two-token level pays only at high acceptance.
        for (const speculationLoad of [undefined, presetSpeculationLoad(0.3)]) {
            const result = await generate(
                target,
                draft,
                prompt,
                {...options, tree: {width: 2, depth: 4}, draftLength: "auto"},
                {speculationLoad}
            );
            expect(result.tokens).toEqual(reference.tokens);
            const depths = result.telemetry.draftLengths.counts;
            expect(depths.length).toBeLessThanOrEqual(5);
            expect(result.telemetry.draftLengths.steps).toBeGreaterThan(0);
        }
    });

    it("T = 0 without the argmax fast path (logit rows) gives the same tokens", async () => {
        const options = {sampling: greedy, maxTokens: 32, ignoreEos: true, tree: {width: 2, depth: 3}};
        const fast = await generate(target, draft, "In the beginning", options);
        const rows = await generate(target, draft, "In the beginning", {...options, argmaxFastPath: false});
        expect(rows.tokens).toEqual(fast.tokens);
    });

    const runs = 2000;
    it(`T = 1, tree 3x2: the first three tokens follow the target's joint law (χ², ${runs} seeds)`, async () => {
        const prompt = "The";
        const {test, accepted} = await jointLawTest(target, {prompt, length: 3, prefixFloor: 1e-4, runs}, (seed) =>
            generate(target, draft, prompt, {tree: {width: 3, depth: 2}, maxTokens: 3, seed})
        );
        console.info(
            `tree 3x2, family pair, "${prompt}", T = 1: χ² ${test.statistic.toFixed(1)} on ${test.degreesOfFreedom} df, p = ${test.pValue.toPrecision(3)}; ${accepted} draft tokens kept`
        );
        expect(test.pValue).toBeGreaterThan(0.001);
        expect(test.degreesOfFreedom).toBeGreaterThan(20);
        expect(accepted).toBeGreaterThan(runs / 2);
    });

    it("refuses what trees cannot do, naming the option", async () => {
        const refused = async (options: object, withDraft = true): Promise<InvalidInputError> => {
            const error = await generate(target, withDraft ? draft : undefined, "The", {
                maxTokens: 4,
                tree: {width: 2, depth: 2},
                ...options
            }).catch((caught: unknown) => caught);
            expect(error).toBeInstanceOf(InvalidInputError);
            return error as InvalidInputError;
        };
        expect((await refused({}, false)).field).toBe("tree");
        expect((await refused({drafter: "ngram"})).field).toBe("tree");
        expect((await refused({policy: {kind: "match"}})).field).toBe("policy");
        expect((await refused({draftSampling: "greedy"})).field).toBe("tree");
        expect((await refused({logprobs: 1})).field).toBe("logprobs");
        expect((await refused({tree: {width: 0, depth: 2}})).field).toBe("tree.width");
    });
});
