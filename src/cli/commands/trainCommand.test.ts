import {afterEach, describe, expect, it, vi} from "vitest";
import {InvalidInputError} from "../../errors.js";
import {LlamaCppToolMissingError} from "../../foundry/finetune/LlamaCppToolMissingError.js";
import {parseTrainOptions, runTrain} from "./trainCommand.js";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";

vi.setConfig(modelTestTimeouts);

const valid = {corpus: "corpus", out: "model.gguf", shape: "64,2,2,192"};

describe("specgate train", () => {
    const saved = process.env.SPECGATE_LLAMA_CPP_BIN;
    afterEach(() => {
        if (saved === undefined) delete process.env.SPECGATE_LLAMA_CPP_BIN;
        else process.env.SPECGATE_LLAMA_CPP_BIN = saved;
    });

    it("parses its flags into trainer options", () => {
        expect(parseTrainOptions({...valid, steps: "500", epochs: "2", learningRate: "3e-4", seed: "4", threads: "1"})).toMatchObject({
            corpus: "corpus",
            out: "model.gguf",
            steps: 500,
            epochs: 2,
            learningRate: 3e-4,
            seed: 4,
            threads: 1,
            shape: {embeddingLength: 64, blockCount: 2, headCount: 2, feedForwardLength: 192}
        });
    });

    it.each([
        [{...valid, corpus: undefined}, "--corpus"],
        [{...valid, out: "model.bin"}, "--out"],
        [{...valid, shape: "64,2,2"}, "--shape"],
        [{...valid, shape: "64,2,3,192"}, "--shape"],
        [{...valid, steps: "100", seconds: "60"}, "--steps"],
        [{...valid, steps: "1.5"}, "--steps"],
        [{...valid, seconds: "-3"}, "--seconds"],
        [{...valid, context: "63"}, "--context"],
        [{...valid, learningRate: "1e-4", minLearningRate: "1e-3"}, "--min-learning-rate"],
        [{...valid, weightDecay: "x"}, "--weight-decay"]
    ])("rejects %o naming %s", (options, flag) => {
        let thrown: unknown;
        try {
            parseTrainOptions(options);
        } catch (error) {
            thrown = error;
        }
        expect(thrown).toBeInstanceOf(InvalidInputError);
        expect((thrown as InvalidInputError).field).toBe(flag);
    });

    it("fails with a typed error naming llama-finetune and the build script when the binary is missing", async () => {
        process.env.SPECGATE_LLAMA_CPP_BIN = "/nonexistent/specgate-bin";
        const error = await runTrain(valid).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(LlamaCppToolMissingError);
        expect((error as LlamaCppToolMissingError).tool).toBe("llama-finetune");
        expect((error as Error).message).toContain("/nonexistent/specgate-bin/llama-finetune");
        expect((error as Error).message).toContain("scripts/buildLlamaCppTools.sh");
    });
});
