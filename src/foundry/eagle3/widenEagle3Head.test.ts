import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, beforeAll, describe, expect, it} from "vitest";
import {InvalidInputError} from "../../errors.js";
import {writeRandomLlamaPair} from "../../gguf/randomLlamaModel.js";
import {widenLlamaModel} from "../../gguf/widenLlamaModel.js";
import {type LlamaGgufContents, readLlamaGguf} from "../model/readLlamaGguf.js";
import {RopeTable} from "../model/RopeTable.js";
import {eagle3Forward} from "./eagle3Forward.js";
import {familyEagle3Config} from "./familyEagle3Config.js";
import {initializeEagle3Weights} from "./initializeEagle3Weights.js";
import {targetFeatures} from "./targetFeatures.js";
import {widenEagle3Head} from "./widenEagle3Head.js";

let directory: string;
let source: LlamaGgufContents;
let twin: LlamaGgufContents;

beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "specgate-widen-eagle3-"));
    const {targetPath} = await writeRandomLlamaPair({
        directory,
        seed: 4,
        target: {embeddingLength: 64, blockCount: 4, headCount: 4, headCountKv: 4, feedForwardLength: 96}
    });
    const widened = await widenLlamaModel({
        source: targetPath,
        shape: {embeddingLength: 128, blockCount: 6, headCount: 8, feedForwardLength: 160},
        outputPath: join(directory, "twin.gguf")
    });
    source = readLlamaGguf(targetPath);
    twin = readLlamaGguf(widened.path);
});
afterAll(async () => {
    await rm(directory, {recursive: true, force: true});
});

describe("widenEagle3Head", () => {
    it("drafts on the widened twin exactly what the source head drafts on the source target", () => {
        const config = familyEagle3Config(source.config);
        const head = {config, weights: initializeEagle3Weights(config, {seed: 5, standardDeviation: 0.3, gainJitter: 0.2})};
        const widened = widenEagle3Head(head, source.config, twin.config);
        expect(widened.config).toMatchObject({embeddingLength: 128, headCount: 8, feedForwardLength: 160, targetHiddenSize: 128});
        // Source layers 1, 2, 3 sit at twin blocks 1, 3, 4 (spread over 6).
        expect(widened.config.targetLayers).toEqual([1, 3, 4]);

        const tokens = [1, 40, 77, 12, 200, 9, 31, 5];
        const sourceRope = new RopeTable(source.config.contextLength + 3, 16, source.config.ropeFreqBase);
        const sourceFeatures = targetFeatures(source.config, source.weights, sourceRope, tokens, config.targetLayers);
        const twinFeatures = targetFeatures(twin.config, twin.weights, sourceRope, tokens, widened.config.targetLayers);
        const expected = eagle3Forward(config, head.weights, sourceRope, {tokens, features: sourceFeatures}, 3);
        const actual = eagle3Forward(widened.config, widened.weights, sourceRope, {tokens, features: twinFeatures}, 3);
        expected.logits.forEach((logits, k) => logits.forEach((value, i) => expect(actual.logits[k][i]).toBeCloseTo(value, 4)));
        // The g it feeds itself stays zero off the source's coordinates.
        const prenorm = actual.steps[2].prenorm;
        for (let row = 0; row < prenorm.length / 128; row++)
            expect(prenorm.subarray(row * 128 + 64, row * 128 + 128).every((value) => value === 0)).toBe(true);
    });

    it("refuses a twin narrower than the head", () => {
        const config = familyEagle3Config(twin.config);
        const head = {config, weights: initializeEagle3Weights(config, {seed: 1})};
        expect(() => widenEagle3Head(head, twin.config, source.config)).toThrow(InvalidInputError);
    });
});
