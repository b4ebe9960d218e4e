import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../errors.js";
import {gammaLabel, parseGammaSpec} from "./gammaSpec.js";

describe("parseGammaSpec", () => {
    it("reads a fixed γ, auto and auto:MAX", () => {
        expect(parseGammaSpec("4", "--gamma")).toEqual({gamma: 4});
        expect(parseGammaSpec(0, "--gamma")).toEqual({gamma: 0});
        expect(parseGammaSpec("auto", "--gamma")).toEqual({gamma: 4, draftLength: "auto", maxGamma: 8});
        expect(parseGammaSpec("auto:16", "--gamma")).toEqual({gamma: 4, draftLength: "auto", maxGamma: 16});
        expect(parseGammaSpec("auto:2", "--gamma")).toEqual({gamma: 2, draftLength: "auto", maxGamma: 2});
    });

    it.each(["", "65", "-1", "1.5", "four", "auto:", "auto:0", "auto:65", "auto:x", "automatic"])(
        "refuses %j, naming the field",
        (value) => {
            const error = (() => {
                try {
                    parseGammaSpec(value, "speculative.gamma");
                } catch (caught) {
                    return caught;
                }
                return undefined;
            })();
            expect(error).toBeInstanceOf(InvalidInputError);
            expect((error as InvalidInputError).field).toBe("speculative.gamma");
        }
    );

    it("labels each form", () => {
        expect(gammaLabel(parseGammaSpec("3", "g"))).toBe("γ=3");
        expect(gammaLabel(parseGammaSpec("auto", "g"))).toBe("γ=auto");
        expect(gammaLabel(parseGammaSpec("auto:16", "g"))).toBe("γ=auto:16");
    });
});
