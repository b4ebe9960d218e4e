import {describe, expect, it} from "vitest";
import {randomAllocationLine} from "./randomAllocationLine.js";

const draftOnly = {accuracy: 0.4, emittedTokens: 900, decodeSeconds: 3};
const targetOnly = {accuracy: 0.9, emittedTokens: 1000, decodeSeconds: 20};

describe("randomAllocationLine", () => {
    it("interpolates accuracy, tokens and time exactly linearly in the share", () => {
        const line = randomAllocationLine(draftOnly, targetOnly);
        for (const share of [0, 0.125, 0.25, 0.5, 0.75, 1]) {
            const point = line.at(share);
            expect(point.accuracy).toBeCloseTo(0.4 + 0.5 * share, 14);
            expect(point.decodeSeconds).toBeCloseTo(3 + 17 * share, 12);
            expect(point.emittedTokens).toBeCloseTo(900 + 100 * share, 12);
            expect(point.tokensPerSecond).toBeCloseTo((900 + 100 * share) / (3 + 17 * share), 12);
        }
        // Equal steps in share give equal steps in accuracy and time: second differences vanish.
        const samples = line.sample(20);
        expect(samples).toHaveLength(21);
        for (let index = 2; index < samples.length; index++) {
            expect(samples[index].accuracy - 2 * samples[index - 1].accuracy + samples[index - 2].accuracy).toBeCloseTo(0, 12);
            expect(samples[index].decodeSeconds - 2 * samples[index - 1].decodeSeconds + samples[index - 2].decodeSeconds).toBeCloseTo(
                0,
                10
            );
        }
        expect(samples[0]).toMatchObject({share: 0, accuracy: 0.4, tokensPerSecond: 300});
        expect(samples[20]).toMatchObject({share: 1, accuracy: 0.9, tokensPerSecond: 50});
        expect(() => line.at(1.5)).toThrow(RangeError);
    });

    it("reads the accuracy at a given speed off the line, and null outside its range", () => {
        const line = randomAllocationLine(draftOnly, targetOnly);
        for (const share of [0, 0.3, 0.6, 1]) {
            const point = line.at(share);
            expect(line.accuracyAtSpeed(point.tokensPerSecond)).toBeCloseTo(point.accuracy, 10);
        }
        expect(line.accuracyAtSpeed(400)).toBeNull();
        expect(line.accuracyAtSpeed(20)).toBeNull();
    });
});
