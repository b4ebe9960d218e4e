import {describe, expect, it} from "vitest";
import {streamGeneration} from "../engine/generate.js";
import {BigramBackend} from "../engine/testing/BigramBackend.js";
import {buildCorrectionMemory} from "./buildCorrectionMemory.js";

const target = BigramBackend.random(1, 8, {scale: 2});
const draft = target.noisyCopy(2, 1.5);

/** Rejected steps of strict greedy decoding: at temperature 0 a step rejects iff it accepts fewer tokens than it drafted. */
async function strictRejections(prompts: readonly string[], stop?: readonly string[]): Promise<number> {
    let rejections = 0;
    for (const [index, prompt] of prompts.entries())
        for await (const chunk of streamGeneration(target, draft, prompt, {
            policy: {kind: "strict"},
            gamma: 4,
            sampling: {temperature: 0},
            maxTokens: 40,
            stop,
            seed: index
        }))
            if (chunk.verification != null && chunk.verification.acceptedCount < chunk.verification.positions.length) rejections++;
    return rejections;
}

describe("buildCorrectionMemory (Calibrated SD paper phase 1)", () => {
    it("decodes exactly like strict and records one divergence per rejected greedy step", async () => {
        const prompts = ["abc", "hgf", "dd"];
        const calibration = await buildCorrectionMemory(target, draft, prompts, {gamma: 4, maxTokens: 40});
        expect(calibration.divergences).toBe(await strictRejections(prompts));
        expect(calibration.divergences).toBeGreaterThan(0);
        expect(calibration.memory.vocabularyIdentity).toBe(target.vocabularyIdentity());
        // Every recorded pair is a real divergence: the draft token differs from the target token.
        for (const [draftToken, targetToken] of calibration.memory.entries()) expect(draftToken).not.toBe(targetToken);
    });

    it("stops each generation at a stop string, recording only the divergences before it", async () => {
        const prompts = ["abc", "hgf"];
        const full = await buildCorrectionMemory(target, draft, prompts, {gamma: 4, maxTokens: 40});
        let text = "";
        for await (const chunk of streamGeneration(target, draft, prompts[0], {
            policy: {kind: "strict"},
            gamma: 4,
            sampling: {temperature: 0},
            maxTokens: 40,
            seed: 0
        }))
            text += chunk.text;
        // Two characters from the middle of the first answer: that generation must end early.
        const stop = [text.slice(8, 10)];
        const stopped = await buildCorrectionMemory(target, draft, prompts, {gamma: 4, maxTokens: 40, stop});
        expect(stopped.divergences).toBe(await strictRejections(prompts, stop));
        expect(stopped.steps).toBeLessThan(full.steps);
    });

    it("extends an initial memory instead of replacing it", async () => {
        const first = await buildCorrectionMemory(target, draft, ["abc"], {gamma: 4, maxTokens: 30});
        const total = first.memory.entries().reduce((sum, [, , count]) => sum + count, 0);
        const second = await buildCorrectionMemory(target, draft, ["abc"], {gamma: 4, maxTokens: 30, initial: first.memory.clone()});
        expect(second.memory.entries().reduce((sum, [, , count]) => sum + count, 0)).toBe(2 * total);
    });
});
