import {describe, expect, it, vi} from "vitest";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import {InvalidDrafterError} from "../errors.js";
import {EmbeddedDecodePath} from "./EmbeddedDecodePath.js";
import {parseDecodePathSpec} from "./parseDecodePathSpec.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

const target = BigramBackend.random(3, 12, {eosBias: -30});
const draft = target.noisyCopy(4, 3);
const request = {prompt: "abcab", maxTokens: 40, temperature: 0};

describe("EmbeddedDecodePath with a drafter", () => {
    it("decodes with an n-gram drafter exactly as target-only at temperature 0 and names it in its description", async () => {
        const targetOnly = new EmbeddedDecodePath("target-only", target, undefined);
        const ngram = new EmbeddedDecodePath("ngram", target, undefined, {drafter: "ngram:1:3"});
        const chain = new EmbeddedDecodePath("chain", target, draft, {drafter: "ngram:1:3+model", gamma: 3});
        const a = await targetOnly.complete(request);
        for (const path of [ngram, chain]) {
            const b = await path.complete(request);
            expect(b.tokens).toEqual(a.tokens);
            expect(b.diagnostics?.acceptanceRate).not.toBeNull();
        }
        expect(ngram.describe().parameters).toMatchObject({speculative: true, drafter: "ngram:1:3", gamma: 4, draftVocabulary: null});
        expect(chain.describe().parameters).toMatchObject({
            speculative: true,
            drafter: "ngram:1:3+model",
            gamma: 3,
            draftVocabulary: draft.vocabularyIdentity()
        });
        expect(new EmbeddedDecodePath("m", target, draft).describe().parameters).toMatchObject({drafter: "model"});
        expect(targetOnly.describe().parameters).toMatchObject({speculative: false, drafter: null});
    });

    it("parses drafter= in a path spec (γ then defaults to 4) and refuses a bad one or a model drafter without a draft", () => {
        expect(parseDecodePathSpec("embedded:target=t.gguf,drafter=ngram:2:5")).toMatchObject({drafter: "ngram:2:5", gamma: 4});
        expect(parseDecodePathSpec("embedded:target=t.gguf")).toMatchObject({gamma: 0});
        expect(() => new EmbeddedDecodePath("p", target, undefined, {drafter: "ngram:0"})).toThrow(InvalidDrafterError);
        expect(() => new EmbeddedDecodePath("p", target, undefined, {drafter: "model"})).toThrow('p: drafter: "model" needs a draft model');
    });
});
