import {describe, expect, it} from "vitest";
import {argmax} from "../distributions/argmax.js";
import {processLogits} from "../distributions/processLogits.js";
import {generate} from "../engine/generate.js";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import {TokenOutOfRangeError} from "../errors.js";
import type {VocabularyDescription} from "./VocabularyDescription.js";
import {restrictVocabulary} from "./restrictVocabulary.js";

const shared = 24;
const padding = 6;

/** A bigram table over `shared + padding` ids whose padding columns outrank every shared id after some tokens. */
function paddedTable(): Float64Array[] {
    const base = BigramBackend.random(5, shared + padding).table;
    return base.map((row, token) => {
        const copy = Float64Array.from(row);
        for (let id = shared; id < shared + padding; id++) copy[id] = token % 3 === 0 ? 50 + id : -50;
        return copy;
    });
}

function withTexts(backend: BigramBackend): BigramBackend {
    const description: VocabularyDescription = {
        model: "gpt2",
        bosToken: 0,
        eosToken: 1,
        addBos: false,
        addEos: false,
        tokens: Array.from({length: backend.vocabularySize}, (_unused, id) => `t${id}`)
    };
    return Object.assign(backend, {vocabularyDescription: () => description});
}

describe("restrictVocabulary", () => {
    it("cuts rows, takes argmax over the cut even when the full argmax is a padding id, and recomputes sampler rows", async () => {
        const full = new BigramBackend(paddedTable());
        const view = restrictVocabulary(full, shared);
        expect(view.vocabularySize).toBe(shared);
        const sequence = await view.createSequence();
        const [row] = await sequence.evaluate([3]);
        expect(row.length).toBe(shared);
        // Token 3 makes a padding id the full argmax; the view answers the argmax over the shared ids.
        expect(argmax(full.table[3])).toBeGreaterThanOrEqual(shared);
        expect(await sequence.evaluateArgmax!([3, 4], {positions: [0, 1]})).toEqual([
            argmax(full.table[3].subarray(0, shared)),
            argmax(full.table[4].subarray(0, shared))
        ]);
        // The fallback undid its first attempt: the cache holds each token once.
        expect(sequence.tokens).toEqual([3, 3, 4]);
        const sampling = {temperature: 0.7, topK: 0, topP: 0.9, minP: 0};
        const rows = await sequence.evaluateDistributions!([6], sampling);
        expect(Array.from(rows.probabilities[0])).toEqual(Array.from(processLogits(full.table[6].subarray(0, shared), sampling)));
        await expect(sequence.evaluate([shared])).rejects.toThrow(TokenOutOfRangeError);
        expect(restrictVocabulary(full, full.vocabularySize)).toBe(full);
    });

    it("a pair whose target has padding rows: strict at T = 0 emits the target's argmax over the shared ids, never a padding id", async () => {
        const target = withTexts(new BigramBackend(paddedTable()));
        const draft = withTexts(
            new BigramBackend(
                paddedTable()
                    .slice(0, shared)
                    .map((row) => row.slice(0, shared))
            )
        );
        const result = await generate(target, draft, [0, 3], {
            policy: {kind: "strict"},
            sampling: {temperature: 0},
            gamma: 4,
            maxTokens: 40
        });
        const expected: number[] = [];
        for (let token = 3; expected.length < result.tokens.length;) {
            token = argmax(target.table[token].subarray(0, shared));
            expected.push(token);
            if (token === 1) break;
        }
        expect(result.tokens).toEqual(expected);
        // In the other direction (the draft is the longer one) nothing beyond the target's ids is proposed.
        const sampled = await generate(draft, target, [0, 3], {
            policy: {kind: "strict"},
            sampling: {temperature: 1},
            gamma: 4,
            maxTokens: 60,
            seed: 3
        });
        expect(sampled.tokens.every((token) => token < shared)).toBe(true);
        expect(sampled.telemetry.toJSON().draftTokens).toBeGreaterThan(0);
    });
});
