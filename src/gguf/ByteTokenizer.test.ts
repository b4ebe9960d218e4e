import {describe, expect, it} from "vitest";
import {InvalidInputError, TokenOutOfRangeError} from "../errors.js";
import {ByteTokenizer, SpmTokenType} from "./ByteTokenizer.js";
import {isRoundTrippable, testPieces, tokenizerCorpus} from "./testing/tokenizerCorpus.js";

describe("ByteTokenizer", () => {
    const tokenizer = new ByteTokenizer();

    it("has specials, 256 byte tokens and the SPM space", () => {
        expect(tokenizer.size).toBe(260);
        expect(tokenizer.vocabulary[0]).toEqual({text: "<unk>", score: 0, type: SpmTokenType.Unknown});
        expect(tokenizer.vocabulary[1].text).toBe("<s>");
        expect(tokenizer.vocabulary[2].text).toBe("</s>");
        expect(tokenizer.vocabulary[3].text).toBe("<0x00>");
        expect(tokenizer.vocabulary[3 + 0xab].text).toBe("<0xAB>");
        expect(tokenizer.vocabulary[258].text).toBe("<0xFF>");
        expect(tokenizer.vocabulary[259]).toEqual({text: "\u2581", score: 0, type: SpmTokenType.Normal});
    });

    it("maps characters to their UTF-8 bytes and spaces to the ▁ token", () => {
        expect(tokenizer.tokenize("a b")).toEqual([3 + 0x61, 259, 3 + 0x62]);
        expect(tokenizer.tokenize("é")).toEqual([3 + 0xc3, 3 + 0xa9]);
        expect(tokenizer.tokenize("\n")).toEqual([3 + 0x0a]);
        expect(tokenizer.tokenize("<s>")).toEqual([3 + 0x3c, 3 + 0x73, 3 + 0x3e]); // never parsed as BOS
        expect(tokenizer.tokenize("")).toEqual([]);
    });

    it("round-trips every corpus string that has no literal ▁", () => {
        const corpus = tokenizerCorpus().filter(isRoundTrippable);
        expect(corpus.length).toBeGreaterThan(200);
        for (const withPieces of [tokenizer, new ByteTokenizer({pieces: testPieces})])
            for (const text of corpus) expect(withPieces.detokenize(withPieces.tokenize(text))).toBe(text);
    });

    it("decodes a literal ▁ as a space (the one lossy case of SPM)", () => {
        expect(tokenizer.tokenize("\u2581")).toEqual([259]);
        expect(tokenizer.detokenize(tokenizer.tokenize("a\u2581b"))).toBe("a b");
    });

    it("merges pieces by score, leftmost first on ties", () => {
        const pieces = new ByteTokenizer({pieces: ["ab", "bc"]});
        expect(pieces.tokenize("abc")).toEqual([260, 3 + 0x63]); // "ab" (260) scores higher than "bc" (261)
        const reversed = new ByteTokenizer({pieces: ["bc", "ab"]});
        expect(reversed.tokenize("abc")).toEqual([3 + 0x61, 260]); // now "bc" is 260 and wins
        const withThe = new ByteTokenizer({pieces: ["th", "the", " t", " th", " the"]});
        expect(withThe.tokenize(" the")).toEqual([264]);
        expect(withThe.tokenize("theme")).toEqual([261, 3 + 0x6d, 3 + 0x65]);
        expect(withThe.detokenize([264, 261])).toBe(" thethe");
        // A piece whose prefixes are missing cannot be reached by pairwise merges.
        expect(new ByteTokenizer({pieces: ["xyz"]}).tokenize("xyz")).toEqual([3 + 0x78, 3 + 0x79, 3 + 0x7a]);
    });

    it("drops control tokens and joins bytes before decoding UTF-8", () => {
        const japanese = tokenizer.tokenize("日本");
        expect(tokenizer.detokenize([ByteTokenizer.bosId, ...japanese, ByteTokenizer.eosId])).toBe("日本");
        expect(tokenizer.detokenize(japanese.slice(0, 2))).toBe("\ufffd"); // an incomplete character
    });

    it("rejects bad pieces and out-of-range tokens", () => {
        expect(() => new ByteTokenizer({pieces: [""]})).toThrow(InvalidInputError);
        expect(() => new ByteTokenizer({pieces: ["<0x41>"]})).toThrow(InvalidInputError);
        expect(() => new ByteTokenizer({pieces: [" "]})).toThrow(InvalidInputError); // is the ▁ token
        expect(() => tokenizer.detokenize([260])).toThrow(TokenOutOfRangeError);
        expect(() => tokenizer.detokenize([-1])).toThrow(TokenOutOfRangeError);
    });
});
