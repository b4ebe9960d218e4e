import {describe, expect, it} from "vitest";
import {wilsonInterval} from "../../statistics/wilsonInterval.js";
import {promptsNeeded, wilsonUpper} from "./promptsNeeded.js";

describe("prompts a canary needs to pass", () => {
    it("agrees with the Wilson interval, and gives the fewest prompts whose upper bound is below the threshold", () => {
        expect(wilsonUpper(0, 8)).toBeCloseTo(wilsonInterval(0, 8).upper, 12);
        expect(wilsonUpper(3 / 40, 40)).toBeCloseTo(wilsonInterval(3, 40).upper, 12);
        // No mismatch: n > z²(1 − t)/t = 3.8415 × 0.985 / 0.015 = 252.3.
        expect(promptsNeeded(0, 0.015)).toBe(253);
        expect(wilsonUpper(0, 253)).toBeLessThan(0.015);
        expect(wilsonUpper(0, 252)).toBeGreaterThanOrEqual(0.015);
        const needed = promptsNeeded(0.005, 0.015)!;
        expect(wilsonUpper(0.005, needed)).toBeLessThan(0.015);
        expect(wilsonUpper(0.005, needed - 1)).toBeGreaterThanOrEqual(0.015);
    });

    it("is null when no number of prompts would do: the rate seen is at or above the threshold", () => {
        expect(promptsNeeded(0.015, 0.015)).toBeNull();
        expect(promptsNeeded(0.2, 0.015)).toBeNull();
        expect(promptsNeeded(0, 0)).toBeNull();
    });
});
