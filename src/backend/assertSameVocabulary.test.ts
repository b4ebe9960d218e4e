import {describe, expect, it} from "vitest";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import {TokenizerMismatchError} from "../errors.js";
import {assertSameVocabulary} from "./assertSameVocabulary.js";
import type {VocabularyDescription} from "./VocabularyDescription.js";

/** A bigram backend of `size` tokens named "t<id>" (overridable), described as a BPE vocabulary. */
function described(size: number, overrides: Partial<VocabularyDescription> = {}, texts: Record<number, string> = {}): BigramBackend {
    const backend = BigramBackend.random(1, size);
    const description: VocabularyDescription = {
        model: "gpt2",
        bosToken: 0,
        eosToken: 1,
        addBos: false,
        addEos: false,
        tokens: Array.from({length: size}, (_unused, id) => texts[id] ?? `t${id}`),
        ...overrides
    };
    return Object.assign(backend, {vocabularyDescription: () => description});
}

describe("assertSameVocabulary (llama.cpp's compatibility rule)", () => {
    it("accepts sizes up to 128 apart in either direction and returns the shared size", () => {
        expect(assertSameVocabulary(described(300), described(300))).toBe(300);
        expect(assertSameVocabulary(described(428), described(300))).toBe(300);
        expect(assertSameVocabulary(described(300), described(428))).toBe(300);
    });

    it("refuses sizes more than 128 apart", () => {
        expect(() => assertSameVocabulary(described(429), described(300), "--draft")).toThrow(
            /--draft: target has 429 tokens, draft has 300: 129 apart, at most 128 allowed/
        );
    });

    it("names the first differing token from id 5 on, and ignores ids below 5", () => {
        expect(assertSameVocabulary(described(40, {}, {3: "<a>"}), described(40, {}, {3: "<b>"}))).toBe(40);
        const error = (() => {
            try {
                assertSameVocabulary(described(40, {}, {17: "hello", 30: "x"}), described(38, {}, {17: "world"}));
            } catch (caught) {
                return caught;
            }
        })();
        expect(error).toBeInstanceOf(TokenizerMismatchError);
        expect((error as Error).message).toBe('draft: token 17 differs: the target\'s is "hello", the draft\'s "world"');
    });

    it("refuses a different tokenizer model, BOS or EOS handling", () => {
        expect(() => assertSameVocabulary(described(40), described(40, {model: "llama"}))).toThrow(
            /tokenizer model is gpt2, the draft's llama/
        );
        expect(() => assertSameVocabulary(described(40, {addBos: true}), described(40))).toThrow(
            /BOS differs: the target adds it \(id 0\), the draft does not add it/
        );
        expect(() => assertSameVocabulary(described(40, {addBos: true}), described(40, {addBos: true, bosToken: 7}))).toThrow(
            /BOS differs/
        );
        // A BOS id that is never added is not compared (as in llama.cpp).
        expect(assertSameVocabulary(described(40), described(40, {bosToken: 7}))).toBe(40);
        expect(() => assertSameVocabulary(described(40, {addEos: true}), described(40, {addEos: true, eosToken: 2}))).toThrow(
            /EOS differs/
        );
    });

    it("holds backends without a description to equal sizes and identities", () => {
        const plain = BigramBackend.random(1, 40);
        expect(assertSameVocabulary(plain, BigramBackend.random(2, 40))).toBe(40);
        expect(() => assertSameVocabulary(plain, BigramBackend.random(2, 41))).toThrow(/target has 40 tokens, draft has 41/);
        expect(() => assertSameVocabulary(plain, new BigramBackend(plain.table, 512, "other"))).toThrow(/vocabulary identity/);
    });
});
