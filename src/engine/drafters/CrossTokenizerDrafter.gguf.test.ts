import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {loadModelBackend} from "../../backend/loadModelBackend.js";
import type {ModelBackend} from "../../backend/ModelBackend.js";
import {processLogits} from "../../distributions/processLogits.js";
import {TokenizerMismatchError} from "../../errors.js";
import {multilingualCorpus} from "../../gguf/testing/multilingualCorpus.js";
import {chiSquareGoodnessOfFit} from "../../statistics/chiSquareGoodnessOfFit.js";
import {generate} from "../generate.js";
import {parseGenerationOptions} from "../GenerationOptions.js";
import {GenerationTelemetry} from "../GenerationTelemetry.js";
import {SeededChance} from "../../random/SeededChance.js";
import {CrossTokenizerDrafter} from "./CrossTokenizerDrafter.js";
import {IncrementalTokenization, tokensContinuing} from "./retokenize.js";
import {writeCrossTokenizerModels} from "./testing/crossTokenizerModels.js";
import {oneHot, oracleDraft, RowBackend} from "./testing/RowBackend.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

// A Qwen3 target (151,669 tokens) and a Llama 3 draft (128,256 tokens): llama.cpp's pairing rule
// refuses the pair, and `model:retokenize` drafts across it.
let directory: string;
let target: ModelBackend;
let draft: ModelBackend;
/** A Llama 2 draft (SentencePiece: a leading space is a token's "▁", dropped where a text starts). */
let spmDraft: ModelBackend;

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-cross-tokenizer-"));
    const paths = await writeCrossTokenizerModels(directory, 5, "qwen3", ["llama3", "llama2"]);
    target = await loadModelBackend(paths.target, {threads: 1, contextSize: 512});
    draft = await loadModelBackend(paths.drafts.llama3!, {threads: 1, contextSize: 512});
    spmDraft = await loadModelBackend(paths.drafts.llama2!, {threads: 1, contextSize: 512});
});

afterAll(async () => {
    await target?.dispose();
    await draft?.dispose();
    await spmDraft?.dispose();
    if (directory !== undefined) await rm(directory, {recursive: true, force: true});
});

const prompts = multilingualCorpus(4, 41);

/** A target double that writes `continuation` after `prompt`, as its own tokenizer tokenizes the text. */
function scriptedTarget(prompt: string, continuation: string): {backend: RowBackend; script: number[]} {
    const promptTokens = target.tokenize(prompt);
    const script = [...promptTokens, ...(tokensContinuing(target, prompt, continuation) ?? target.tokenize(continuation))];
    const backend = new RowBackend(target, (tokens) =>
        oneHot(
            target.vocabularySize,
            tokens.length < script.length && tokens.every((token, index) => token === script[index])
                ? script[tokens.length]
                : target.eosToken!
        )
    );
    return {backend, script};
}

describe("model:retokenize: a Llama 3 draft for a Qwen3 target", () => {
    it("llama.cpp's rule refuses the pair for `model`, naming what differs first and the spec that drafts across it", async () => {
        const refusal = generate(target, draft, "Hello", {maxTokens: 4});
        await expect(refusal).rejects.toThrow(TokenizerMismatchError);
        await expect(generate(target, draft, "Hello", {maxTokens: 4})).rejects.toThrow(
            /^draft: BOS differs: the target does not add it \(id 151643\), the draft adds it \(id 128000\); the drafter "model:retokenize" drafts with a model of another vocabulary$/
        );
    });

    it("at temperature 0, strict and greedy give target-only's tokens, token for token, while proposals are made", async () => {
        let drafted = 0;
        for (const prompt of prompts) {
            const options = {sampling: {temperature: 0}, maxTokens: 24, gamma: 4};
            const reference = await generate(target, undefined, prompt, options);
            for (const policy of ["strict", "greedy"] as const) {
                for (const argmaxFastPath of [true, false]) {
                    const result = await generate(target, draft, prompt, {
                        ...options,
                        policy: {kind: policy},
                        drafter: "model:retokenize",
                        argmaxFastPath
                    });
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
        for (const pattern of [/\p{Script=Han}/u, /\p{Extended_Pictographic}/u, /\p{M}/u, /\p{Script=Devanagari}/u])
            expect(joined).toMatch(pattern);
        let drafted = 0;
        let accepted = 0;
        for (const [index, continuation] of continuations.entries()) {
            const prompt = prompts[index % prompts.length];
            const {backend, script} = scriptedTarget(prompt, continuation);
            const oracle = oracleDraft(draft, prompt + continuation);
            const result = await generate(
                backend,
                oracle,
                prompt,
                {
                    sampling: {temperature: 0},
                    maxTokens: 200,
                    gamma: 4,
                    drafter: "model:retokenize"
                },
                {drafter: new CrossTokenizerDrafter(oracle)}
            );
            expect(result.tokens).toEqual(script.slice(result.promptTokens));
            expect(result.text).toBe(continuation);
            drafted += result.telemetry.draftTokens;
            accepted += result.telemetry.acceptedTokens;
        }
        expect(drafted).toBeGreaterThan(200);
        console.log(`oracle draft: ${accepted} of ${drafted} proposed tokens accepted (${((100 * accepted) / drafted).toFixed(1)}%)`);
        expect(accepted / drafted).toBeGreaterThan(0.8);
    });

    it.each(["llama3", "llama2"])(
        "from every point of a text, partial characters included, a %s draft's proposal is the target's own next tokens",
        async (family) => {
            // Byte pieces split the ZWJ family, the flag, the Fraktur letters, 漢, the Devanagari conjuncts
            // and the stacked combining marks in both vocabularies, at different bytes.
            const text = "Hi 👨‍👩‍👧‍👦 🇯🇵 and 𝔘𝔫𝔦 漢字 क्षत्रिय ǟ Z͑͒ done 123456 it's\n\n\tok";
            const script = [...target.tokenize(text), target.eosToken!];
            const oracle = oracleDraft(family === "llama3" ? draft : spmDraft, text);
            const misses: string[] = [];
            let proposed = 0;
            for (let cut = 1; cut < script.length - 1; cut++) {
                const history = script.slice(0, cut);
                const session = await new CrossTokenizerDrafter(oracle).start({
                    target,
                    promptTokens: history,
                    options: parseGenerationOptions({}),
                    chance: new SeededChance(1),
                    telemetry: new GenerationTelemetry()
                });
                const {tokens} = await session.propose({history, maxTokens: 4, argmaxOnly: true});
                await session.dispose();
                proposed += tokens.length;
                if (tokens.some((token, index) => token !== script[cut + index]))
                    misses.push(
                        `after ${JSON.stringify(target.detokenize(history))}: ${JSON.stringify(tokens.map((token) => target.detokenize([token])))}`
                    );
            }
            console.log(`${family} draft: ${proposed} tokens proposed at ${script.length - 2} points, ${misses.length} points wrong`);
            expect(misses).toEqual([]);
            // 52 points, at most 4 tokens each; where the history ends inside a character the draft's
            // context stops before it, and some points propose nothing.
            expect(proposed).toBeGreaterThanOrEqual(140);
        }
    );

    it.each(["llama3", "llama2"])(
        "the %s draft's view of a growing text, re-tokenized in a window, spells the text as tokenizing it whole does",
        (family) => {
            const tokenizer = family === "llama3" ? draft : spmDraft;
            let same = 0;
            let frozeSome = 0;
            const texts = multilingualCorpus(60, 13).map((text, index) => text.repeat(2 + (index % 3)));
            for (const [index, text] of texts.entries()) {
                const view = new IncrementalTokenization(tokenizer);
                // The text arrives in pieces of 1 to 7 characters, as a target's tokens would add it.
                let end = 0;
                let tokens: readonly number[] = [];
                while (end < text.length) {
                    end = Math.min(text.length, end + 1 + ((end * 7 + index) % 7));
                    if (end < text.length && text.charCodeAt(end - 1) >= 0xd800 && text.charCodeAt(end - 1) <= 0xdbff) end++;
                    tokens = view.update(text.slice(0, end));
                    expect(tokenizer.detokenize(tokens)).toBe(tokenizer.detokenize(tokenizer.tokenize(text.slice(0, end))));
                }
                if (view.frozenCount > 0) frozeSome++;
                const whole = tokenizer.tokenize(text);
                if (whole.length === tokens.length && whole.every((token, position) => token === tokens[position])) same++;
            }
            console.log(`${family}: ${same} of ${texts.length} texts tokenized as whole, ${frozeSome} with a frozen prefix`);
            expect(frozeSome).toBeGreaterThan(texts.length / 2);
            expect(same).toBe(texts.length);
        }
    );

    it("at temperature 1, strict's tokens follow the target's own distribution while a draft proposes (χ², 600 runs)", async () => {
        // A target double with the Qwen3 tokenizer whose every row after the prompt is the same: eight
        // words with the probabilities `expected`. So each of the three tokens is drawn from `expected`,
        // whichever step verifies a proposal. The draft always proposes " cat" (through the Llama 3
        // tokenizer and back), so the accept and the resample branches both run.
        const prompt = "Once upon a time,";
        const words = [" cat", " dog", " fox", " 日本", " 😀", " café", " नमस्ते", " over"].map((word) => target.tokenize(word)[0]);
        expect(new Set(words).size).toBe(words.length);
        const logits = new Float64Array(target.vocabularySize).fill(-40);
        words.forEach((id, index) => (logits[id] = 1 - 0.3 * index));
        const expected = processLogits(logits);
        const backend = new RowBackend(target, () => logits);
        const [cat] = draft.tokenize(" cat");
        const catDraft = new RowBackend(draft, () => oneHot(draft.vocabularySize, cat));
        const drafter = new CrossTokenizerDrafter(catDraft);
        const observed = new Float64Array(target.vocabularySize);
        let drafted = 0;
        let accepted = 0;
        for (let seed = 0; seed < 600; seed++) {
            const result = await generate(
                backend,
                catDraft,
                prompt,
                {policy: {kind: "strict"}, gamma: 3, maxTokens: 3, seed, sampling: {temperature: 1}, ignoreEos: true},
                {drafter}
            );
            expect(result.tokens).toHaveLength(3);
            for (const token of result.tokens) observed[token]++;
            const counters = result.telemetry.drafters.byDrafter.get("model:retokenize");
            expect(counters?.draftTokens).toBeGreaterThan(0);
            drafted += counters!.draftedPerPosition[0];
            accepted += counters!.acceptedPerPosition[0];
        }
        const test = chiSquareGoodnessOfFit(observed, expected);
        console.log(`χ²: ${accepted} of ${drafted} proposals' first " cat" accepted, p = ${test.pValue.toFixed(3)}`);
        // p(" cat") = 0.285: a proposal's first " cat" is accepted with that probability.
        expect(accepted / drafted).toBeGreaterThan(0.22);
        expect(accepted / drafted).toBeLessThan(0.35);
        expect(test.pValue).toBeGreaterThan(0.001);
    });
});
