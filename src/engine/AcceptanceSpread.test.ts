import {describe, expect, it} from "vitest";
import {AcceptanceSpread, maxWeight, minWeight} from "./AcceptanceSpread.js";

describe("AcceptanceSpread", () => {
    it("weighs the prior least until enough generations with enough observations have finished", () => {
        const spread = new AcceptanceSpread();
        expect(spread.priorWeight).toBe(minWeight);
        for (let generation = 0; generation < 10; generation++) spread.record(3, 2);
        expect(spread.priorWeight).toBe(minWeight);
        for (let generation = 0; generation < 3; generation++) spread.record(90, 10);
        expect(spread.priorWeight).toBe(minWeight);
    });

    it("weighs it most when generations agree within what their counts explain", () => {
        const spread = new AcceptanceSpread();
        for (const accepted of [90, 91, 89, 90, 92, 88]) spread.record(accepted, 100 - accepted);
        expect(spread.priorWeight).toBe(maxWeight);
    });

    it("weighs it by the beta distribution of the spread when generations differ", () => {
        const spread = new AcceptanceSpread();
        const rates = [0.82, 0.9, 0.86, 0.95, 0.92, 0.88];
        for (const rate of rates) spread.record(1000 * rate, 1000 * (1 - rate));
        const mean = rates.reduce((a, b) => a + b, 0) / rates.length;
        const variance = rates.reduce((sum, rate) => sum + (rate - mean) ** 2, 0) / (rates.length - 1);
        const expected = (mean * (1 - mean)) / (variance - (mean * (1 - mean)) / 1000) - 1;
        expect(expected).toBeGreaterThan(minWeight);
        expect(expected).toBeLessThan(maxWeight);
        expect(spread.priorWeight).toBeCloseTo(expected, 9);
        // Acceptance this different between generations: a generation follows its own within a few steps.
        for (const rate of [0.1, 0.99, 0.2, 0.98]) spread.record(1000 * rate, 1000 * (1 - rate));
        expect(spread.priorWeight).toBe(minWeight);
    });

    it("keeps the last generations only", () => {
        const spread = new AcceptanceSpread(4);
        for (const rate of [0.1, 0.99, 0.2, 0.98]) spread.record(1000 * rate, 1000 * (1 - rate));
        expect(spread.priorWeight).toBe(minWeight);
        for (let generation = 0; generation < 4; generation++) spread.record(900, 100);
        expect(spread.priorWeight).toBe(maxWeight);
    });
});
