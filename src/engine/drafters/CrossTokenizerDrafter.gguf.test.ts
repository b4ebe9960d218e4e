import {mkdir, mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {loadModelBackend} from "../../backend/loadModelBackend.js";
import type {BackendSequence, EvaluateOptions, ModelBackend} from "../../backend/ModelBackend.js";
import {argmax} from "../../distributions/argmax.js";
import {processLogits} from "../../distributions/processLogits.js";
import {TokenizerMismatchError} from "../../errors.js";
import {writeRandomLlamaPair} from "../../gguf/randomLlamaModel.js";
import {multilingualCorpus} from "../../gguf/testing/multilingualCorpus.js";
import {familyVocabulary} from "../../gguf/tokenizerFamilies.js";
import {chiSquareGoodnessOfFit} from "../../statistics/chiSquareGoodnessOfFit.js";
import {generate} from "../generate.js";
import {CrossTokenizerDrafter} from "./CrossTokenizerDrafter.js";
import {textTail, tokensContinuing, withoutPartialCharacter} from "./retokenize.js";

// A Qwen3 target (151,669 tokens) and a Llama 3 draft (128,256 tokens): llama.cpp's pairing rule
// refuses the pair, and `model:retokenize` drafts across it.
const shapes = {
    target: {embeddingLength: 16, blockCount: 1, headCount: 2, headCountKv: 2, feedForwardLength: 32},
    draft: {embeddingLength: 8, blockCount: 1, headCount: 1, headCountKv: 1, feedForwardLength: 16}
};
let directory: string;
let target: ModelBackend;
let draft: ModelBackend;

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-cross-tokenizer-"));
    const paths: Record<string, string> = {};
    for (const family of ["qwen3", "llama3"] as const) {
        await mkdir(join(directory, family));
        const pair = await writeRandomLlamaPair({directory: join(directory, family), seed: 5, vocabulary: await familyVocabulary(family), ...shapes});
        paths[family] = family === "qwen3" ? pair.targetPath : pair.draftPath;
    }
    target = await loadModelBackend(paths.qwen3, {threads: 1, contextSize: 512});
    draft = await loadModelBackend(paths.llama3, {threads: 1, contextSize: 512});
});

afterAll(async () => {
    await target?.dispose();
    await draft?.dispose();
    if (directory !== undefined) await rm(directory, {recursive: true, force: true});
});

const prompts = multilingualCorpus(4, 41);

/** A model double with a real backend's tokenizer whose logit row after `tokens` is `row(tokens)`. */
class RowBackend implements ModelBackend {
    public readonly vocabularySize: number;
    public readonly contextSize: number;
    public readonly bosToken: number | undefined;
    public readonly eosToken: number | undefined;

    public constructor(private readonly base: ModelBackend, private readonly row: (tokens: readonly number[]) => Float64Array) {
        this.vocabularySize = base.vocabularySize;
        this.contextSize = base.contextSize;
        this.bosToken = base.bosToken;
        this.eosToken = base.eosToken;
    }

    public tokenize(text: string): number[] {
        return this.base.tokenize(text);
    }

    public detokenize(tokens: readonly number[]): string {
        return this.base.detokenize(tokens);
    }

    public vocabularyIdentity(): string {
        return this.base.vocabularyIdentity();
    }

    public vocabularyDescription() {
        return this.base.vocabularyDescription!();
    }

    public async createSequence(): Promise<BackendSequence> {
        const tokens: number[] = [];
        const rows = (batch: readonly number[], options?: EvaluateOptions): Float64Array[] => {
            const start = tokens.length;
            tokens.push(...batch);
            return (options?.positions ?? [batch.length - 1]).map((position) => this.row(tokens.slice(0, start + position + 1)));
        };
        return {
            tokens,
            evaluate: async (batch, options) => rows(batch, options),
            evaluateArgmax: async (batch, options) => rows(batch, options).map((row) => argmax(row)),
            rollback: async (count) => {
                tokens.length -= count;
            },
            clear: async () => {
                tokens.length = 0;
            },
            dispose: async () => {}
        };
    }

    public async dispose(): Promise<void> {}
}

const oneHotRows = new Map<string, Float64Array>();

/** A row with logit 20 on `id` and 0 elsewhere (one shared instance per size and id: rows are only read). */
function oneHot(size: number, id: number): Float64Array {
    const key = `${size}:${id}`;
    let row = oneHotRows.get(key);
    if (row === undefined) {
        row = new Float64Array(size);
        row[id] = 20;
        oneHotRows.set(key, row);
    }
    return row;
}

/** A target double that writes `continuation` after `prompt`, as its own tokenizer tokenizes the text. */
function scriptedTarget(prompt: string, continuation: string): {backend: RowBackend; script: number[]} {
    const promptTokens = target.tokenize(prompt);
    const script = [...promptTokens, ...(tokensContinuing(target, prompt, continuation) ?? target.tokenize(continuation))];
    const backend = new RowBackend(target, (tokens) => oneHot(target.vocabularySize,
        tokens.length < script.length && tokens.every((token, index) => token === script[index]) ? script[tokens.length] : target.eosToken!));
    return {backend, script};
}

/**
 * An oracle draft with the Llama 3 tokenizer that knows the whole text (`text`): it proposes the
 * draft tokenization of what follows its context's text, so every proposal is the target's future
 * text as the draft's vocabulary spells it.
 */
function oracleDraft(text: string): RowBackend {
    const spelled = draft.tokenize(text);
    return new RowBackend(draft, (tokens) => oneHot(draft.vocabularySize, nextOf(tokens)));
    function nextOf(tokens: readonly number[]): number {
        const body = tokens[0] === draft.bosToken ? tokens.slice(1) : tokens;
        if (body.length < spelled.length && body.every((token, index) => token === spelled[index])) return spelled[body.length];
        const decoded = draft.detokenize(body);
        const clean = withoutPartialCharacter(decoded);
        if (clean !== decoded || !text.startsWith(clean) || clean.length === text.length) return draft.eosToken!;
        const rest = text.slice(clean.length);
        return (tokensContinuing(draft, textTail(clean, 32), rest) ?? draft.tokenize(rest))[0];
    }
}

describe("model:retokenize: a Llama 3 draft for a Qwen3 target", () => {
    it("llama.cpp's rule refuses the pair for `model`, naming what differs first and the spec that drafts across it", async () => {
        const refusal = generate(target, draft, "Hello", {maxTokens: 4});
        await expect(refusal).rejects.toThrow(TokenizerMismatchError);
        await expect(generate(target, draft, "Hello", {maxTokens: 4})).rejects.toThrow(
            /^draft: BOS differs: the target does not add it \(id 151643\), the draft adds it \(id 128000\); --drafter model:retokenize drafts with a model of another vocabulary$/
        );
    });

    it("at temperature 0, strict and greedy give target-only's tokens, token for token, while proposals are made", async () => {
        let drafted = 0;
        for (const prompt of prompts) {
            const options = {sampling: {temperature: 0}, maxTokens: 24, gamma: 4};
            const reference = await generate(target, undefined, prompt, options);
            for (const policy of ["strict", "greedy"] as const) {
                for (const argmaxFastPath of [true, false]) {
                    const result = await generate(target, draft, prompt, {...options, policy: {kind: policy}, drafter: "model:retokenize", argmaxFastPath});
                    expect(result.tokens).toEqual(reference.tokens);
                    expect(result.text).toBe(reference.text);
                    drafted += result.telemetry.draftTokens;
                }
            }
        }
        expect(drafted).toBeGreaterThan(100);
    });

    it("a draft that knows the target's future text is accepted > 80%, across CJK, emoji and combining marks", async () => {
        const continuations = multilingualCorpus(12, 7).map((text) => `${text} ${[...text].reverse().join("")}`);
        // Ensure the scripts the re-tokenization must carry are there.
        const joined = continuations.join("");
        for (const pattern of [/\p{Script=Han}/u, /\p{Extended_Pictographic}/u, /\p{M}/u, /\p{Script=Devanagari}/u]) expect(joined).toMatch(pattern);
        let drafted = 0;
        let accepted = 0;
        for (const [index, continuation] of continuations.entries()) {
            const prompt = prompts[index % prompts.length];
            const {backend, script} = scriptedTarget(prompt, continuation);
            const oracle = oracleDraft(prompt + continuation);
            const result = await generate(backend, oracle, prompt, {
                sampling: {temperature: 0}, maxTokens: 200, gamma: 4, drafter: "model:retokenize"
            }, {drafter: new CrossTokenizerDrafter(oracle)});
            expect(result.tokens).toEqual(script.slice(result.promptTokens));
            expect(result.text).toBe(continuation);
            drafted += result.telemetry.draftTokens;
            accepted += result.telemetry.acceptedTokens;
        }
        expect(drafted).toBeGreaterThan(200);
        console.log(`oracle draft: ${accepted} of ${drafted} proposed tokens accepted (${(100 * accepted / drafted).toFixed(1)}%)`);
        expect(accepted / drafted).toBeGreaterThan(0.8);
    });

    it("at temperature 1, strict's output follows the target's own distribution where a proposal is verified (χ², 800 runs)", async () => {
        // A target double with the Qwen3 tokenizer: " the" for certain, then one of eight words with
        // the probabilities `expected`, then EOS. The draft proposes " cat" (its text, through the
        // Llama 3 tokenizer and back) for the second token, so the accept and the resample branches both run.
        const prompt = "Once upon a time,";
        const promptTokens = target.tokenize(prompt);
        const [the] = target.tokenize(" the");
        const words = [" cat", " dog", " fox", " 日本", " 😀", " café", " नमस्ते", " over"].map((word) => target.tokenize(word)[0]);
        expect(new Set(words).size).toBe(words.length);
        const logits = new Float64Array(target.vocabularySize).fill(-40);
        words.forEach((id, index) => (logits[id] = 1 - 0.3 * index));
        const expected = processLogits(logits);
        const certainThe = oneHot(target.vocabularySize, the).map((value) => 3 * value);
        const backend = new RowBackend(target, (tokens) =>
            tokens.length === promptTokens.length ? certainThe
                : tokens.length === promptTokens.length + 1 ? logits : oneHot(target.vocabularySize, target.eosToken!));
        const oracle = oracleDraft(`${prompt} the cat sat on the mat`);
        const drafter = new CrossTokenizerDrafter(oracle);
        const observed = new Float64Array(target.vocabularySize);
        let accepted = 0;
        for (let seed = 0; seed < 800; seed++) {
            const result = await generate(backend, oracle, prompt, {policy: {kind: "strict"}, gamma: 3, maxTokens: 3, seed, sampling: {temperature: 1}}, {drafter});
            expect(result.tokens[0]).toBe(the);
            observed[result.tokens[1]]++;
            expect(result.telemetry.drafters.byDrafter.get("model:retokenize")?.draftedPerPosition[0]).toBe(1);
            accepted += result.telemetry.drafters.byDrafter.get("model:retokenize")?.acceptedPerPosition[0] ?? 0;
        }
        // p(" cat") = 0.285: accepted about 228 times (sd 13).
        expect(accepted).toBeGreaterThan(170);
        expect(accepted).toBeLessThan(290);
        const test = chiSquareGoodnessOfFit(observed, expected);
        console.log(`χ²: accepted ${accepted} of 800, p = ${test.pValue.toFixed(3)}`);
        expect(test.pValue).toBeGreaterThan(0.001);
    });
});
