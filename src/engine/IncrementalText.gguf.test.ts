import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {loadModelBackend} from "../backend/loadModelBackend.js";
import type {ModelBackend} from "../backend/ModelBackend.js";
import {writeRandomLlamaPair} from "../gguf/randomLlamaModel.js";
import {multilingualCorpus} from "../gguf/testing/multilingualCorpus.js";
import {familyVocabulary, type TokenizerFamily} from "../gguf/tokenizerFamilies.js";
import {IncrementalText} from "./IncrementalText.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/** A seeded generator in [0, 1) (mulberry32). */
function random(seed: number): () => number {
    let state = seed >>> 0;
    return () => {
        state = (state + 0x6d2b79f5) >>> 0;
        let value = Math.imul(state ^ (state >>> 15), 1 | state);
        value = (value + Math.imul(value ^ (value >>> 7), 61 | value)) ^ value;
        return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
    };
}

/**
 * IncrementalText against llama.cpp's own detokenizer on real vocabularies: byte-level BPE whose
 * tokens end inside UTF-8 characters and whose clean-up rewrites spaces (llama3), SentencePiece with
 * its leading space and byte-fallback pieces (llama2, gemma3). After every update its text is the
 * whole sequence's, for tokenized multilingual text and for random ids, grown 1 to 6 tokens at a time.
 */
describe.each(["qwen3", "llama3", "llama2", "gemma3"] as TokenizerFamily[])("IncrementalText on the %s vocabulary", (family) => {
    let directory: string;
    let model: ModelBackend;
    beforeAll(async () => {
        directory = await mkdtemp(join(tmpdir(), `specgate-incremental-${family}-`));
        const shape = {embeddingLength: 8, blockCount: 1, headCount: 1, headCountKv: 1, feedForwardLength: 16};
        const pair = await writeRandomLlamaPair({
            directory,
            seed: 1,
            vocabulary: await familyVocabulary(family),
            target: shape,
            draft: shape
        });
        model = await loadModelBackend(pair.targetPath, {threads: 1, contextSize: 64});
    }, 120_000);
    afterAll(async () => {
        await model?.dispose();
        await rm(directory, {recursive: true, force: true});
    });

    const check = (tokens: readonly number[], seed: number): number => {
        const next = random(seed);
        const text = new IncrementalText((part) => model.detokenize(part), {context: 2, margin: 3, settleEvery: 4});
        let checked = 0;
        for (let end = 0; end < tokens.length;) {
            end = Math.min(tokens.length, end + 1 + Math.floor(next() * 6));
            const sequence = tokens.slice(0, end);
            expect(text.update(sequence), `${family}, seed ${seed}, ${end} tokens`).toBe(model.detokenize(sequence));
            checked++;
        }
        return checked;
    };

    it("gives the whole text after every update, for tokenized multilingual text", () => {
        const texts = multilingualCorpus(12, 11);
        let checked = 0;
        texts.forEach((text, index) => (checked += check(model.tokenize(texts.slice(index).join(" ") + text), index)));
        expect(checked).toBeGreaterThan(100);
    });

    it('gives the whole text after every update where the clean-up takes spaces back (" ,", " \'s") at every cut', () => {
        const pieces = ["Hello", " ", ",", " world", " ", "'s", " ", "'", " ", "ok", " ", "?", " '", "re", " ", "."];
        const tokens = Array.from({length: 6}, () => pieces.flatMap((piece) => model.tokenize(piece))).flat();
        for (let seed = 0; seed < 8; seed++) check(tokens, 2000 + seed);
    });

    it("gives the whole text after every update, for random ids (byte pieces and special tokens included)", () => {
        for (let seed = 0; seed < 12; seed++) {
            const next = random(1000 + seed);
            // Half the ids from the first 512 (bytes, specials and short pieces), half from the whole vocabulary.
            const tokens = Array.from({length: 120}, (_value, index) =>
                Math.floor(next() * (index % 2 === 0 ? Math.min(512, model.vocabularySize) : model.vocabularySize))
            );
            check(tokens, seed);
        }
    });
});

describe("IncrementalText", () => {
    it("decodes only a bounded window per update once text has settled", () => {
        let decoded = 0;
        const pieces = (tokens: readonly number[]): string => {
            decoded += tokens.length;
            return tokens.map((token) => String.fromCharCode(97 + (token % 26))).join("");
        };
        const text = new IncrementalText(pieces);
        const tokens: number[] = [];
        for (let index = 0; index < 2000; index++) {
            tokens.push(index);
            expect(text.update(tokens).length).toBe(tokens.length);
        }
        // Decoding everything every step would read 2,001,000 tokens.
        expect(decoded).toBeLessThan(2000 * 60);
    });

    it("starts over on a sequence shorter than the last", () => {
        const text = new IncrementalText((tokens) => tokens.join(","), {context: 1, margin: 1, settleEvery: 1});
        const tokens = Array.from({length: 10}, (_value, index) => index);
        for (let end = 1; end <= tokens.length; end++) text.update(tokens.slice(0, end));
        expect(text.update([7, 8])).toBe("7,8");
    });
});
