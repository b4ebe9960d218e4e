import {describe, expect, it} from "vitest";
import {Random} from "../../random/Random.js";
import {linearBackward, linearForward} from "../model/linear.js";
import {blockedLinearBackward, blockedLinearForward} from "./blockedLinear.js";

describe("blockedLinear", () => {
    it("computes what linearForward and linearBackward compute, odd sizes included", () => {
        const random = new Random(3);
        const values = (length: number): Float64Array => Float64Array.from({length}, () => random.nextDouble() - 0.5);
        for (const [rows, inputWidth, outputWidth] of [
            [5, 7, 3],
            [4, 8, 6],
            [1, 1, 1]
        ]) {
            const input = values(rows * inputWidth);
            const weight = values(outputWidth * inputWidth);
            const outputGradient = values(rows * outputWidth);
            const forward = blockedLinearForward(input, weight, rows, inputWidth, outputWidth);
            const reference = linearForward(input, weight, rows, inputWidth, outputWidth);
            forward.forEach((value, i) => expect(value).toBeCloseTo(reference[i], 12));
            const weightGradient = values(weight.length);
            const referenceWeightGradient = Float64Array.from(weightGradient);
            const inputGradient = blockedLinearBackward(input, weight, outputGradient, weightGradient, rows, inputWidth, outputWidth);
            const referenceInput = linearBackward(input, weight, outputGradient, referenceWeightGradient, rows, inputWidth, outputWidth);
            inputGradient.forEach((value, i) => expect(value).toBeCloseTo(referenceInput[i], 12));
            weightGradient.forEach((value, i) => expect(value).toBeCloseTo(referenceWeightGradient[i], 12));
        }
    });
});
