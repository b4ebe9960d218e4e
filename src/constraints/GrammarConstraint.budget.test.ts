import {afterAll, beforeAll, describe, expect, it, vi} from "vitest";
import {NativeBackend} from "../backend/NativeBackend.js";
import {generate} from "../engine/generate.js";
import {GrammarTooComplexError} from "../errors.js";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {slowGrammar} from "../testing/slowGrammar.js";
import {longestEventLoopGap, settled} from "../testing/longestEventLoopGap.js";

vi.setConfig(modelTestTimeouts);

const familyTarget = new URL("../../models/target/model.gguf", import.meta.url).pathname;

describe("a grammar whose steps explode after a quick build (slowGrammar)", () => {
    let backend: NativeBackend;
    let a: number;

    beforeAll(async () => {
        backend = await NativeBackend.load(familyTarget);
        a = backend.tokenize("a")[0]!;
    });

    afterAll(async () => {
        await backend.dispose();
    });

    const compile = (depth: number, computeBudgetMs: number) =>
        backend.compileConstraint(slowGrammar(depth), {maxJobs: 4, computeBudgetMs, field: "response_format"});

    it("checks a token off the event loop and ends the call at the compute budget; the constraint then refuses every call", async () => {
        // Depth 12 builds in tens of milliseconds; checking its first token takes seconds or more.
        const constraint = await compile(12, 300);
        try {
            const {result: error, gap, elapsed} = await longestEventLoopGap(() => settled(constraint.acceptTokens([a], {restore: true})));
            expect(error).toBeInstanceOf(GrammarTooComplexError);
            expect((error as GrammarTooComplexError).field).toBe("response_format");
            expect((error as Error).message).toMatch(/compute budget of 300 ms/);
            // Generous: the machine is shared; on the JS thread this call froze the loop for its whole length.
            expect(gap).toBeLessThan(500);
            expect(elapsed).toBeLessThan(30_000);
            await expect(constraint.acceptTokens([a])).rejects.toBe(error);
            await expect(constraint.maskLogits(new Float64Array(backend.vocabularySize))).rejects.toBe(error);
        } finally {
            constraint.dispose();
        }
    });

    it("ends a generation with grammar_too_complex while the event loop stays responsive", async () => {
        const constraint = await compile(14, 1000);
        try {
            const {
                result: error,
                gap,
                elapsed
            } = await longestEventLoopGap(() =>
                settled(generate(backend, undefined, "Say a", {maxTokens: 8, sampling: {temperature: 0}}, {constraint}))
            );
            expect(error).toBeInstanceOf(GrammarTooComplexError);
            expect((error as GrammarTooComplexError).code).toBe("grammar_too_complex");
            expect(gap).toBeLessThan(500);
            expect(elapsed).toBeLessThan(30_000);
        } finally {
            constraint.dispose();
        }
    });

    it("a grammar that stays small generates as before through the same calls", async () => {
        const constraint = await compile(3, 60_000);
        try {
            const result = await generate(backend, undefined, "Say a", {maxTokens: 8, sampling: {temperature: 0}}, {constraint});
            expect(result.text).toMatch(/^a{0,8}$/);
            expect(result.text.length).toBeGreaterThan(0);
        } finally {
            constraint.dispose();
        }
    });
});
