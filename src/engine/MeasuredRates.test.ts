import {describe, expect, it} from "vitest";
import {AdaptiveDraftLength} from "./AdaptiveDraftLength.js";
import {MeasuredRates} from "./MeasuredRates.js";
import {presetSpeculationLoad} from "./testing/presetSpeculationLoad.js";

/** A clock the test moves. */
function testClock(): {now: number; read: () => number} {
    const clock = {now: 0, read: () => clock.now};
    return clock;
}

/** Runs `steps` shared steps of `length` on `rates`: each emits `tokens` and takes `milliseconds`, predicted `predicted` tokens per ms. */
function steps(
    rates: MeasuredRates,
    clock: {now: number},
    key: string,
    run: {steps: number; length: number; tokens: number; milliseconds: number; predicted: number}
): void {
    for (let step = 0; step < run.steps; step++) {
        rates.begin(key, run.length, run.predicted);
        rates.emitted(run.tokens);
        clock.now += run.milliseconds;
    }
}

describe("MeasuredRates", () => {
    it("divides the measured rate of a length's steady steps by the predicted one, and leaves unmeasured loads at 1", () => {
        const clock = testClock();
        const rates = new MeasuredRates(true, clock.read);
        const key = MeasuredRates.key(4, 1);
        expect(rates.factor(key, 2)).toBe(1);
        // 4 tokens in 2 ms = 2 per ms, predicted 2.5: 0.8.
        steps(rates, clock, key, {steps: 6, length: 2, tokens: 4, milliseconds: 2, predicted: 2.5});
        rates.begin(key, 0, 1);
        expect(rates.factor(key, 2)).toBeCloseTo(0.8, 9);
        // The first step of a length is not measured: it pays the change.
        expect(rates.measured(key, 0)).toBe(false);
        expect(rates.factor(MeasuredRates.key(16, 1), 2)).toBe(1);
    });

    it("gives an unmeasured length its measured neighbours' factor, interpolated between two", () => {
        const clock = testClock();
        const rates = new MeasuredRates(true, clock.read);
        const key = MeasuredRates.key(1, 1);
        steps(rates, clock, key, {steps: 5, length: 0, tokens: 1, milliseconds: 1, predicted: 1});
        steps(rates, clock, key, {steps: 5, length: 4, tokens: 3, milliseconds: 2, predicted: 3});
        rates.begin(key, 1, 1);
        expect(rates.factor(key, 0)).toBeCloseTo(1, 9);
        expect(rates.factor(key, 4)).toBeCloseTo(0.5, 9);
        expect(rates.factor(key, 2)).toBeCloseTo(0.75, 9);
        expect(rates.factor(key, 8)).toBeCloseTo(0.5, 9);
    });

    it("does not count a step held up far beyond its length's usual, nor one during which a generation joined or left", () => {
        const clock = testClock();
        const rates = new MeasuredRates(true, clock.read);
        const key = MeasuredRates.key(2, 1);
        steps(rates, clock, key, {steps: 5, length: 2, tokens: 2, milliseconds: 1, predicted: 2});
        rates.begin(key, 2, 2);
        rates.emitted(2);
        clock.now += 100;
        rates.begin(key, 2, 2);
        rates.emitted(2);
        rates.disturb();
        clock.now += 0.1;
        rates.begin(key, 2, 2);
        expect(rates.factor(key, 2)).toBeCloseTo(1, 9);
    });

    it("tries a length within reach for a few steps at doubling intervals, and not one measured clearly slower", () => {
        const clock = testClock();
        const rates = new MeasuredRates(true, clock.read);
        const key = MeasuredRates.key(8, 1);
        const tried: number[] = [];
        for (let step = 0; step < 300; step++) {
            const length = rates.explore(key, 0, [3], () => 1);
            if (length !== undefined) tried.push(step);
            rates.begin(key, length ?? 0, 1);
            rates.emitted(1);
            clock.now += 1;
        }
        // Four steps from step 32, then 64 and 128 steps later.
        expect(tried).toEqual([32, 33, 34, 35, 96, 97, 98, 99, 224, 225, 226, 227]);
        // Measured at half the chosen length's rate, a length is tried once (to measure it), then not until maxExploreInterval.
        const far = new MeasuredRates(true, clock.read);
        const lengths: number[] = [];
        for (let step = 0; step < 500; step++) {
            const length = far.explore(key, 4, [0], (candidate) => (candidate === 4 || !far.measured(key, 0) ? 1 : 0.5)) ?? 4;
            lengths.push(length);
            far.begin(key, length, 1);
            far.emitted(1);
            clock.now += 1;
        }
        expect(lengths.flatMap((length, step) => (length === 0 ? [step] : []))).toEqual([32, 33, 34, 35]);
        // Not measuring, it tries nothing.
        const blind = new MeasuredRates(false);
        for (let step = 0; step < 100; step++) {
            expect(blind.explore(key, 0, [3], () => 1)).toBeUndefined();
            blind.begin(key, 0, 1);
        }
    });
});

describe("draftLength auto corrected by measured rates", () => {
    /** Steps of one auto generation where a drafted step really costs `drafted` ms, a step without a draft 1 ms. */
    function serve(slope: number, drafted: number, count: number): number[] {
        const clock = testClock();
        const load = presetSpeculationLoad(slope, new MeasuredRates(true, clock.read));
        const auto = new AdaptiveDraftLength(load, {choose: true, maxLength: 8, initialLength: 4, tokensPerPosition: 1});
        const lengths: number[] = [];
        for (let step = 0; step < count; step++) {
            const length = auto.next(4);
            lengths.push(length);
            const accepted = Math.min(length, 2);
            clock.now += length === 0 ? 1 : drafted;
            auto.observe({proposed: length, accepted, draftMilliseconds: 0, stepMilliseconds: 0});
        }
        return lengths;
    }

    it("stops drafting where drafted steps are measured slower than the model predicts, and keeps it where they are not", () => {
        // The model (a step of n tokens costs 1 + 0.1·(n − 1)) says drafts pay; measured, a drafted step costs 4.
        const slow = serve(0.1, 4, 400);
        expect(slow.slice(0, 10).some((length) => length > 0)).toBe(true);
        expect(slow.slice(-200).filter((length) => length === 0).length).toBeGreaterThan(180);
        // Measured as predicted (about 1.3 ms for a few drafted tokens): drafting stays on.
        const fair = serve(0.1, 1.3, 400);
        expect(fair.slice(-200).filter((length) => length > 0).length).toBeGreaterThan(180);
    });
});
