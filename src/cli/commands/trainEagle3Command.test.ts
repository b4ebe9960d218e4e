import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../../errors.js";
import {defaultEagle3Settings} from "../../foundry/eagle3/trainEagle3.js";
import {parseTrainEagle3Options} from "./trainEagle3Command.js";

const required = {target: "models/target/model.gguf", out: "head.gguf"};

function flagOf(options: Parameters<typeof parseTrainEagle3Options>[0]): string | undefined {
    try {
        parseTrainEagle3Options(options);
    } catch (error) {
        expect(error).toBeInstanceOf(InvalidInputError);
        return (error as InvalidInputError).field;
    }
    return undefined;
}

describe("parseTrainEagle3Options", () => {
    it("fills the defaults and reads every flag", () => {
        const parsed = parseTrainEagle3Options({...required, seconds: "60"});
        expect(parsed.settings).toEqual(defaultEagle3Settings);
        expect(parsed.work).toBe(".tmp/eagle3");
        const custom = parseTrainEagle3Options({
            ...required,
            steps: "10",
            prompts: "30",
            temperatures: "0,0.7",
            layers: "0,1,2",
            ff: "256",
            unrolledSteps: "3",
            batch: "2",
            learningRate: "0.001",
            init: "random"
        });
        expect(custom.settings.initialization).toBe("random");
        expect(custom.steps).toBe(10);
        expect(custom.settings.data.prompts).toBe(30);
        expect(custom.settings.data.temperatures).toEqual([0, 0.7]);
        expect(custom.settings.shape).toEqual({targetLayers: [0, 1, 2], feedForwardLength: 256});
        expect(custom.settings.unrolledSteps).toBe(3);
        expect(custom.settings.batchSize).toBe(2);
        expect(custom.settings.learningRate).toBe(0.001);
    });

    it("names the flag of bad input", () => {
        expect(flagOf({out: "head.gguf", steps: "1"})).toBe("--target");
        expect(flagOf({...required, out: "head.bin", steps: "1"})).toBe("--out");
        expect(flagOf({...required})).toBe("--steps");
        expect(flagOf({...required, steps: "5", seconds: "5"})).toBe("--steps");
        expect(flagOf({...required, steps: "0"})).toBe("--steps");
        expect(flagOf({...required, steps: "1", layers: "1,2"})).toBe("--layers");
        expect(flagOf({...required, steps: "1", mixture: "nope"})).toBe("--mixture");
        expect(flagOf({...required, steps: "1", temperatures: "0,5"})).toBe("--temperatures");
        expect(flagOf({...required, steps: "1", learningRate: "0"})).toBe("--learning-rate");
        expect(flagOf({...required, steps: "1", init: "draft"})).toBe("--init");
    });
});
