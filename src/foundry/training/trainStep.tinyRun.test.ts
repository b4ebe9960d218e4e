import {describe, expect, it, vi} from "vitest";
import {modelTestTimeouts} from "../../testing/modelTestTimeouts.js";
import {freshTinyState, tinyOptions, tinyTokenStream} from "./testing/tinyTrainingRun.js";
import {trainStep} from "./trainStep.js";

// Trains a model for 60 steps: the `model` project (ARCHITECTURE.md, "Tests").
vi.setConfig(modelTestTimeouts);

describe("trainStep", () => {
    it("lowers the loss on a tiny run, from about ln 260 towards the byte statistics of the corpus", () => {
        const stream = tinyTokenStream();
        const state = freshTinyState();
        const losses = Array.from({length: tinyOptions.totalSteps}, () => trainStep(state, stream).loss);
        const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;
        expect(Math.abs(losses[0] - Math.log(260))).toBeLessThan(0.1);
        expect(mean(losses.slice(-10))).toBeLessThan(mean(losses.slice(0, 5)) - 1.2); // observed: 5.2 → 3.5
        expect(state.step).toBe(tinyOptions.totalSteps);
    });
});
