import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {NodeLlamaCppBackend} from "../backend/NodeLlamaCppBackend.js";
import type {ByteTokenizer} from "./ByteTokenizer.js";
import {writeRandomLlamaPair} from "./randomLlamaModel.js";
import {isRoundTrippable, testPieces, tokenizerCorpus} from "./testing/tokenizerCorpus.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

/**
 * Our TypeScript tokenizer against the llama.cpp bundled with node-llama-cpp, on GGUF files this
 * project wrote: identical ids for every corpus string, identical text for every id sequence.
 */
describe.each([
    {label: "bytes only", pieces: [] as string[]},
    {label: "with merge pieces", pieces: testPieces}
])("ByteTokenizer vs llama.cpp ($label)", ({pieces}) => {
    let directory: string;
    let backend: NodeLlamaCppBackend;
    let tokenizer: ByteTokenizer;
    const corpus = tokenizerCorpus();

    beforeAll(async () => {
        directory = await mkdtemp(join(tmpdir(), "specgate-tokenizer-"));
        const pair = await writeRandomLlamaPair({directory, seed: 3, pieces});
        tokenizer = pair.tokenizer!;
        backend = await NodeLlamaCppBackend.load(pair.draftPath, {threads: 1});
    });
    afterAll(async () => {
        await backend?.dispose();
        await rm(directory, {recursive: true, force: true});
    });

    it("tokenizes every corpus string to the same ids", () => {
        expect(corpus.length).toBeGreaterThanOrEqual(250);
        for (const text of corpus) expect(tokenizer.tokenize(text), JSON.stringify(text)).toEqual(backend.tokenize(text));
    });

    it("round-trips every corpus string without a literal ▁, in both implementations", () => {
        for (const text of corpus.filter(isRoundTrippable)) {
            const ids = tokenizer.tokenize(text);
            expect(backend.detokenize(ids), JSON.stringify(text)).toBe(text);
            expect(tokenizer.detokenize(ids)).toBe(text);
        }
    });

    it("detokenizes arbitrary id sequences identically, including broken UTF-8 and control tokens", () => {
        let state = 99;
        for (let trial = 0; trial < 300; trial++) {
            const ids: number[] = [];
            const length = 1 + (trial % 9);
            for (let i = 0; i < length; i++) {
                state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
                ids.push(state % tokenizer.size);
            }
            expect(tokenizer.detokenize(ids), JSON.stringify(ids)).toBe(backend.detokenize(ids));
        }
    });

    it("agrees on the vocabulary size and special tokens", () => {
        expect(backend.vocabularySize).toBe(tokenizer.size);
        expect(backend.bosToken).toBe(1);
        expect(backend.eosToken).toBe(2);
    });
});
