import {describe, expect, it} from "vitest";
import {SpmTokenType} from "./ByteTokenizer.js";
import {hfSpmVocabulary} from "./hfSpmVocabulary.js";

/** A SentencePiece BPE export in miniature: specials, two byte pieces, merges, a Prepend normalizer. */
const tokenizerJson = {
    normalizer: {
        type: "Sequence",
        normalizers: [
            {type: "Prepend", prepend: "\u2581"},
            {type: "Replace", pattern: {String: " "}, content: "\u2581"}
        ]
    },
    model: {
        type: "BPE",
        byte_fallback: true,
        unk_token: "<unk>",
        vocab: {"<unk>": 0, "<s>": 1, "</s>": 2, "<0x00>": 3, "<0xFF>": 4, "\u2581": 5, a: 6, b: 7, "\u2581a": 8, ab: 9, "\u2581ab": 10},
        merges: ["\u2581 a", "a b", "\u2581a b", "\u2581 ab"]
    },
    added_tokens: [
        {id: 0, content: "<unk>", special: true},
        {id: 1, content: "<s>", special: true},
        {id: 2, content: "</s>", special: true},
        {id: 11, content: "\u2581\u2581", special: false},
        {id: 12, content: "<unused0>", special: false}
    ]
};
const tokenizerConfig = {
    bos_token: "<s>",
    eos_token: "</s>",
    unk_token: "<unk>",
    add_bos_token: true,
    add_eos_token: false,
    chat_template: "{{ messages }}"
};

function entry(entries: ReturnType<ReturnType<typeof hfSpmVocabulary>["metadata"]>, key: string): unknown {
    const value = entries.find((candidate) => candidate.key === key)?.value;
    return typeof value === "object" && value !== null && "items" in value ? [...value.items] : value;
}

describe("hfSpmVocabulary", () => {
    it("writes a llama.cpp SPM vocabulary: types, merge-rank scores, special ids, the space prefix, padding", () => {
        const vocabulary = hfSpmVocabulary({tokenizerJson, tokenizerConfig});
        expect(vocabulary.size).toBe(13);
        expect(vocabulary.chatTemplate).toBe("{{ messages }}");
        const entries = vocabulary.metadata(2);
        expect(entry(entries, "tokenizer.ggml.model")).toBe("llama");
        expect(entry(entries, "tokenizer.ggml.tokens")).toEqual([
            "<unk>",
            "<s>",
            "</s>",
            "<0x00>",
            "<0xFF>",
            "\u2581",
            "a",
            "b",
            "\u2581a",
            "ab",
            "\u2581ab",
            "  ",
            "<unused0>",
            "[PAD13]",
            "[PAD14]"
        ]);
        const {Normal, Unknown, Control, UserDefined, Unused, Byte} = SpmTokenType;
        // As the converter writes added tokens: special (or special-looking) ones CONTROL, the others
        // USER_DEFINED with "▁" as a space, all scored −1000; <unk> is a special added token here.
        expect(entry(entries, "tokenizer.ggml.token_type")).toEqual([
            Control,
            Control,
            Control,
            Byte,
            Byte,
            Normal,
            Normal,
            Normal,
            Normal,
            Normal,
            Normal,
            UserDefined,
            Control,
            Unused,
            Unused
        ]);
        // "▁ab" is made first by merge 2 ("▁a b"); merge 3 ("▁ ab") makes it again and does not lower its score.
        expect(entry(entries, "tokenizer.ggml.scores")).toEqual([-1000, -1000, -1000, 0, 0, 0, 0, 0, -1, -2, -3, -1000, -1000, 0, 0]);
        const unknownOnly = hfSpmVocabulary({tokenizerJson: {...tokenizerJson, added_tokens: []}, tokenizerConfig}).metadata(0);
        expect((entry(unknownOnly, "tokenizer.ggml.token_type") as number[])[0]).toBe(Unknown);
        expect([
            entry(entries, "tokenizer.ggml.bos_token_id"),
            entry(entries, "tokenizer.ggml.eos_token_id"),
            entry(entries, "tokenizer.ggml.unknown_token_id")
        ]).toEqual([1, 2, 0]);
        expect([
            entry(entries, "tokenizer.ggml.add_bos_token"),
            entry(entries, "tokenizer.ggml.add_eos_token"),
            entry(entries, "tokenizer.ggml.add_space_prefix")
        ]).toEqual([true, false, true]);
    });

    it("refuses what is not a SentencePiece BPE export, naming the field", () => {
        expect(() =>
            hfSpmVocabulary({tokenizerJson: {...tokenizerJson, model: {...tokenizerJson.model, byte_fallback: false}}, tokenizerConfig})
        ).toThrow(/^tokenizer\.json: model is "BPE" with byte_fallback false/);
        expect(() =>
            hfSpmVocabulary({tokenizerJson: {...tokenizerJson, model: {...tokenizerJson.model, merges: [42]}}, tokenizerConfig})
        ).toThrow(/^tokenizer\.json: model\.merges\[0\]: must be/);
        expect(() => hfSpmVocabulary({tokenizerJson, tokenizerConfig: {...tokenizerConfig, bos_token: "<bos>"}})).toThrow(
            /^bos_token: names "<bos>", which is not a token/
        );
    });
});
