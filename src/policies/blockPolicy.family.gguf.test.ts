import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {loadModelBackend} from "../backend/loadModelBackend.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {generate} from "../engine/generate.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {jointLawTest} from "../testing/jointLawTest.js";

vi.setConfig(modelTestTimeouts);

/**
 * Block verification on the shipped family pair (models/target, models/draft: trained, one byte
 * vocabulary of 260 ids) at temperature 1, through the engine: the first three generated tokens must
 * follow the target's own joint distribution p(a)·p(b | a)·p(c | a b). γ = 2 (maxTokens 3 caps it),
 * because with γ = 1 block verification is strict (h_1 = w_1 = min(1, p/q), residual max(p − q, 0)):
 * the second token is where it differs — a draft token kept thanks to the block's weight, or the
 * residual of a stopped block. The prompt "The" is one of the few on which these models hesitate
 * (≈ 0.9, 1.9 and 1.3 nats over the three positions, draft overlap 0.5–0.7), so the test has many cells.
 */
const targetPath = new URL("../../models/target/model.gguf", import.meta.url).pathname;
const draftPath = new URL("../../models/draft/model.gguf", import.meta.url).pathname;
const prompt = "The";
const runs = 3000;
/** Prefixes below this target probability are not expanded; their whole mass is one "rest" cell. */
const prefixFloor = 1e-4;

let target: ModelBackend;
let draft: ModelBackend;
beforeAll(async () => {
    target = await loadModelBackend(targetPath, {threads: 1});
    draft = await loadModelBackend(draftPath, {threads: 1});
});
afterAll(async () => {
    await draft?.dispose();
    await target?.dispose();
});

describe("block verification on the family pair at temperature 1", () => {
    it(`the first three generated tokens follow the target's joint distribution (χ², ${runs} seeds, γ = 2)`, async () => {
        const {test, cells, rest, accepted, drafted} = await jointLawTest(target, {prompt, length: 3, prefixFloor, runs}, (seed) =>
            generate(target, draft, prompt, {policy: {kind: "block"}, gamma: 2, maxTokens: 3, seed})
        );
        console.info(
            `block, family pair, "${prompt}", T = 1: χ² ${test.statistic.toFixed(1)} on ${test.degreesOfFreedom} df (${cells} cells + rest ${rest.toExponential(2)}), p = ${test.pValue.toPrecision(3)}; ${accepted} of ${drafted} draft tokens kept`
        );
        expect(test.pValue).toBeGreaterThan(0.001);
        expect(test.degreesOfFreedom).toBeGreaterThan(20);
        // The test only means something if many tokens came from the draft.
        expect(accepted).toBeGreaterThan(runs / 2);
    });
});
