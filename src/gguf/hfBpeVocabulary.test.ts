import {mkdtemp, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../errors.js";
import {SpmTokenType} from "./ByteTokenizer.js";
import {hfBpeVocabulary} from "./hfBpeVocabulary.js";
import {resolveTokenizerVocabulary} from "./tokenizerFamilies.js";

/** A four-token byte-level BPE tokenizer with two added tokens and a gap at id 5. */
const tokenizerJson = {
    model: {
        type: "BPE",
        vocab: {a: 0, b: 1, ab: 2, Ġa: 3},
        merges: [
            ["a", "b"],
            ["Ġ", "a"]
        ]
    },
    added_tokens: [
        {id: 4, content: "<|end|>", special: true},
        {id: 6, content: "<think>", special: false}
    ],
    post_processor: {
        type: "Sequence",
        processors: [{type: "ByteLevel"}, {type: "TemplateProcessing", single: [{SpecialToken: {id: "<|end|>"}}, {Sequence: {id: "A"}}]}]
    }
};

function metadataOf(vocabulary: ReturnType<typeof hfBpeVocabulary>, padding = 0): Map<string, unknown> {
    return new Map(vocabulary.metadata(padding).map((entry) => [entry.key, entry.value]));
}

describe("hfBpeVocabulary", () => {
    it("writes tokens by id with [PAD] gaps, the converter's token types, merges, special ids and the template", () => {
        const vocabulary = hfBpeVocabulary(
            {tokenizerJson, tokenizerConfig: {eos_token: "<|end|>", bos_token: {content: "<|end|>"}, chat_template: "{{ x }}"}},
            {pre: "qwen2"}
        );
        expect(vocabulary.size).toBe(7);
        expect(vocabulary.chatTemplate).toBe("{{ x }}");
        const metadata = metadataOf(vocabulary, 2);
        expect(metadata.get("tokenizer.ggml.model")).toBe("gpt2");
        expect(metadata.get("tokenizer.ggml.pre")).toBe("qwen2");
        expect(metadata.get("tokenizer.ggml.tokens")).toMatchObject({
            items: ["a", "b", "ab", "Ġa", "<|end|>", "[PAD5]", "<think>", "[PAD7]", "[PAD8]"]
        });
        const {Normal, Control, Unused, UserDefined} = SpmTokenType;
        expect(metadata.get("tokenizer.ggml.token_type")).toMatchObject({
            items: [Normal, Normal, Normal, Normal, Control, Unused, UserDefined, Unused, Unused]
        });
        expect(metadata.get("tokenizer.ggml.merges")).toMatchObject({items: ["a b", "Ġ a"]});
        expect(metadata.get("tokenizer.ggml.eos_token_id")).toBe(4);
        // No add_bos_token in the config: the post-processor's template starts with BOS.
        expect(metadata.get("tokenizer.ggml.add_bos_token")).toBe(true);
        expect(metadata.has("tokenizer.ggml.padding_token_id")).toBe(false);
    });

    it("names what is wrong", () => {
        expect(() => hfBpeVocabulary({tokenizerJson: {model: {type: "Unigram", vocab: {}}}, tokenizerConfig: {}}, {pre: "x"})).toThrow(
            /tokenizer.json: model.type is "Unigram"; only byte-level BPE tokenizers are written/
        );
        expect(() => hfBpeVocabulary({tokenizerJson, tokenizerConfig: {eos_token: "</s>"}}, {pre: "x"})).toThrow(
            /eos_token: names "<\/s>", which is not a token/
        );
        expect(() =>
            hfBpeVocabulary(
                {tokenizerJson: {...tokenizerJson, model: {...tokenizerJson.model, merges: [1]}}, tokenizerConfig: {}},
                {pre: "x"}
            )
        ).toThrow(/model.merges\[0\]/);
    });

    it("a tokenizer folder needs a pre-tokenizer name, and missing files are named", async () => {
        const directory = await mkdtemp(join(tmpdir(), "specgate-hf-tokenizer-"));
        try {
            await expect(resolveTokenizerVocabulary(directory, undefined)).rejects.toThrow(/^tokenizer: .* a tokenizer folder needs pre, /);
            await expect(resolveTokenizerVocabulary(directory, "qwen2")).rejects.toThrow(InvalidInputError);
            await writeFile(join(directory, "tokenizer.json"), JSON.stringify(tokenizerJson));
            await writeFile(join(directory, "tokenizer_config.json"), JSON.stringify({add_bos_token: false}));
            const vocabulary = await resolveTokenizerVocabulary(directory, "llama-bpe");
            expect(metadataOf(vocabulary).get("tokenizer.ggml.add_bos_token")).toBe(false);
        } finally {
            await rm(directory, {recursive: true, force: true});
        }
    });
});
