import {describe, expect, it} from "vitest";
import {processLogits} from "../distributions/processLogits.js";
import {generate, type GenerationResult} from "../engine/generate.js";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import {chiSquareGoodnessOfFit} from "../statistics/chiSquareGoodnessOfFit.js";
import {presetSpeculationLoad} from "../engine/testing/presetSpeculationLoad.js";

/**
 * `block` through the engine on a bigram backend (rows depend on the previous token, so every
 * drafted token changes the next rows): target-only greedy at temperature 0, the target's own law of
 * the first three tokens at temperature 1 (γ = 2, where block differs from strict), with a draft
 * model and with q-less n-gram drafts, and more tokens kept per step than strict on the same seeds.
 */
const target = BigramBackend.random(1, 8, {scale: 2});
const draft = target.noisyCopy(2, 1.0);
const eos = 1;
const size = target.vocabularySize;

/** P(first three generated tokens) after a prompt ending in `last`, cell a·V² + b·V + c; EOS repeats once reached. */
function firstThreeTokensDistribution(last: number): Float64Array {
    const rows = target.table.map((logits) => processLogits(logits));
    const expected = new Float64Array(size ** 3);
    for (let a = 0; a < size; a++)
        for (let b = 0; b < size; b++)
            for (let c = 0; c < size; c++) {
                const pa = rows[last][a];
                if (a === eos) expected[a * size * size + b * size + c] = b === eos && c === eos ? pa : 0;
                else if (b === eos) expected[a * size * size + b * size + c] = c === eos ? pa * rows[a][eos] : 0;
                else expected[a * size * size + b * size + c] = pa * rows[a][b] * rows[b][c];
            }
    return expected;
}

function firstThreeTokensCell(result: Pick<GenerationResult, "tokens">): number {
    const tokens = [...result.tokens];
    while (tokens.length < 3) tokens.push(eos);
    const [a, b, c] = tokens.map((token, index) => (tokens.slice(0, index).includes(eos) ? eos : token));
    return a * size * size + b * size + c;
}

describe("block verification in the engine (bigram backend)", () => {
    it("at temperature 0 reproduces target-only greedy, with a draft model and with n-gram drafts, on both argmax paths", async () => {
        for (const prompt of [
            [0, 2, 3],
            [0, 5],
            [0, 4, 3, 4]
        ]) {
            const baseline = await generate(target, undefined, prompt, {sampling: {temperature: 0}, maxTokens: 40});
            for (const argmaxFastPath of [true, false]) {
                const withModel = await generate(target, draft, prompt, {
                    policy: {kind: "block"},
                    gamma: 4,
                    sampling: {temperature: 0},
                    maxTokens: 40,
                    argmaxFastPath
                });
                expect(withModel.tokens).toEqual(baseline.tokens);
                expect(withModel.telemetry.acceptedTokens).toBeGreaterThan(0);
                const withNgram = await generate(target, undefined, prompt, {
                    policy: {kind: "block"},
                    drafter: "ngram:1:3",
                    gamma: 4,
                    sampling: {temperature: 0},
                    maxTokens: 40,
                    argmaxFastPath
                });
                expect(withNgram.tokens).toEqual(baseline.tokens);
            }
        }
    });

    it("at temperature 1 the first three tokens follow the target (χ², 3000 seeds, γ = 2), with a draft model and with q-less n-gram drafts", async () => {
        const expected = firstThreeTokensDistribution(4);
        for (const [name, drafted] of [
            ["model", {draft, prompt: [0, 4]}],
            ["ngram:1:1", {draft: undefined, prompt: [0, 4, 3, 4]}]
        ] as const) {
            const observed = new Float64Array(size ** 3);
            let proposed = 0;
            for (let seed = 0; seed < 3000; seed++) {
                const result = await generate(target, drafted.draft, drafted.prompt, {
                    policy: {kind: "block"},
                    ...(drafted.draft == null ? {drafter: "ngram:1:1"} : {}),
                    gamma: 2,
                    maxTokens: 3,
                    seed
                });
                proposed += result.telemetry.draftTokens;
                observed[firstThreeTokensCell(result)]++;
            }
            expect(proposed, name).toBeGreaterThanOrEqual(3000);
            expect(chiSquareGoodnessOfFit(observed, expected).pValue, name).toBeGreaterThan(0.001);
        }
    });

    it("draftLength auto: the first three tokens follow the target while the draft length varies between 0, 1 and 2 (χ², 3000 seeds)", async () => {
        const expected = firstThreeTokensDistribution(4);
        const observed = new Float64Array(size ** 3);
        // Preset costs: the lengths follow acceptance (this generation's and earlier ones'), not the machine's timing.
        const load = presetSpeculationLoad(0.5);
        const lengths = [0, 0, 0];
        for (let seed = 0; seed < 3000; seed++) {
            const result = await generate(
                target,
                draft,
                [0, 4],
                {policy: {kind: "block"}, draftLength: "auto", gamma: 2, maxTokens: 3, seed},
                {speculationLoad: load}
            );
            result.telemetry.draftLengths.counts.forEach((count, length) => (lengths[length] += count));
            observed[firstThreeTokensCell(result)]++;
        }
        expect(
            lengths.every((count) => count > 0),
            lengths.join(", ")
        ).toBe(true);
        expect(chiSquareGoodnessOfFit(observed, expected).pValue).toBeGreaterThan(0.001);
    });

    it("keeps more tokens per step than strict at temperature 1 (same seeds, γ = 4)", async () => {
        const perStep = async (kind: "strict" | "block") => {
            let accepted = 0;
            let steps = 0;
            for (let seed = 0; seed < 200; seed++) {
                const result = await generate(target, draft, [0, 2], {policy: {kind}, gamma: 4, maxTokens: 40, seed});
                accepted += result.telemetry.acceptedTokens;
                steps += result.telemetry.steps;
            }
            return accepted / steps;
        };
        const strict = await perStep("strict");
        const block = await perStep("block");
        console.info(`bigram pair, T = 1, γ = 4: accepted per step block ${block.toFixed(3)}, strict ${strict.toFixed(3)}`);
        expect(block).toBeGreaterThan(strict);
    });
});
