import {describe, expect, it} from "vitest";
import {InvalidDistributionError} from "../errors.js";
import {processLogits} from "./processLogits.js";
import {samplingOptionsSchema} from "./SamplingOptions.js";
import {logSumExp, softmax} from "./softmax.js";

const options = (input: object) => samplingOptionsSchema.parse(input);
const sum = (row: ArrayLike<number>) => Array.from(row).reduce((total, value) => total + value, 0);

describe("processLogits", () => {
    it("is the plain softmax at temperature 1: e^x / Σe^x", () => {
        const row = processLogits([0, Math.log(2), Math.log(3)]);
        expect(Array.from(row)).toEqual([1 / 6, 2 / 6, 3 / 6].map((value) => expect.closeTo(value, 15)));
    });

    it("divides logits by the temperature", () => {
        const row = processLogits([0, Math.log(4)], options({temperature: 2}));
        expect(row[0]).toBeCloseTo(1 / 3, 15);
        expect(row[1]).toBeCloseTo(2 / 3, 15);
    });

    it("temperature 0 is one-hot on the argmax, lowest id on ties", () => {
        expect(Array.from(processLogits([1, 3, 3, 2], options({temperature: 0})))).toEqual([0, 1, 0, 0]);
    });

    it("is stable for huge and tiny logits and treats -Infinity as a mask", () => {
        const row = processLogits([1e300, 1e300 - 1e285, -1e300, -Infinity]);
        expect(row[0]).toBe(1);
        expect(Array.from(row.subarray(1))).toEqual([0, 0, 0]);
        const masked = processLogits([-Infinity, 0, 0]);
        expect(Array.from(masked)).toEqual([0, 0.5, 0.5]);
        expect(sum(processLogits([-1e5, -1e5 + 1, -1e5 + 2]))).toBeCloseTo(1, 14);
    });

    it("top-k keeps the k largest and ties at the k-th value (vLLM)", () => {
        const row = processLogits([1, 2, 2, 3, 0], options({topK: 2}));
        // 3 and both 2s survive: the k-th largest value is 2.
        expect(Array.from(row).map((value) => value > 0)).toEqual([false, true, true, true, false]);
        expect(sum(row)).toBeCloseTo(1, 15);
        expect(Array.from(processLogits([1, 2, 3, 4], options({topK: 1})))).toEqual([0, 0, 0, 1]);
    });

    it("top-p keeps the shortest prefix reaching p, including the token that crosses it", () => {
        const logits = [0.5, 0.3, 0.15, 0.05].map(Math.log);
        expect(Array.from(processLogits(logits, options({topP: 0.79}))).map((value) => value > 0)).toEqual([true, true, false, false]);
        expect(Array.from(processLogits(logits, options({topP: 0.81}))).map((value) => value > 0)).toEqual([true, true, true, false]);
        const nucleus = processLogits(logits, options({topP: 0.79}));
        expect(nucleus[0]).toBeCloseTo(0.625, 14);
    });

    it("min-p keeps tokens with p ≥ minP · p_max", () => {
        const logits = [0.5, 0.3, 0.15, 0.05].map(Math.log);
        expect(Array.from(processLogits(logits, options({minP: 0.3}))).map((value) => value > 0)).toEqual([true, true, true, false]);
    });

    it("applies temperature before top-p (vLLM/HF order)", () => {
        const logits = [0.6, 0.3, 0.1].map(Math.log);
        // At T=1 the nucleus for 0.85 is {0,1}; at T=3 the row flattens and needs all three.
        expect(Array.from(processLogits(logits, options({topP: 0.85}))).filter((value) => value > 0)).toHaveLength(2);
        expect(Array.from(processLogits(logits, options({temperature: 3, topP: 0.85}))).filter((value) => value > 0)).toHaveLength(3);
    });

    it("rejects NaN, +Infinity and all-masked rows with a typed error naming the field", () => {
        expect(() => processLogits([0, NaN], undefined, undefined, "targetLogits[2]")).toThrow(/targetLogits\[2\]: logit 1 is NaN/);
        expect(() => processLogits([Infinity, 0])).toThrow(InvalidDistributionError);
        expect(() => processLogits([-Infinity, -Infinity])).toThrow(/every logit is -Infinity/);
        expect(() => processLogits([])).toThrow(/empty/);
    });

    it("validates options: negative temperature, top-p 0, unknown option", () => {
        expect(() => options({temperature: -1})).toThrow();
        expect(() => options({topP: 0})).toThrow();
        expect(() => options({topk: 3})).toThrow();
    });
});

describe("softmax helpers", () => {
    it("logSumExp is exact on simple cases and finite for huge logits", () => {
        expect(logSumExp([0, 0])).toBeCloseTo(Math.log(2), 15);
        expect(logSumExp([1000, 1000])).toBeCloseTo(1000 + Math.log(2), 12);
        expect(logSumExp([-Infinity])).toBe(-Infinity);
    });
    it("softmax of an all-masked row throws", () => {
        expect(() => softmax([-Infinity])).toThrow(RangeError);
    });
});
