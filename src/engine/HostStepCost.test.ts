import {describe, expect, it} from "vitest";
import {HostStepCost, staleAfter} from "./HostStepCost.js";

describe("HostStepCost", () => {
    it("keeps the recent median of steps without a draft and of drafted steps of every length, never predicting a drafted step cheaper", () => {
        const cost = new HostStepCost();
        expect(cost.predict(0)).toBe(0);
        for (const milliseconds of [0.2, 0.3, 9]) cost.record(0, milliseconds);
        expect(cost.predict(0)).toBe(0.3);
        expect(cost.predict(4)).toBe(0.3);
        for (const [length, milliseconds] of [
            [2, 0.5],
            [4, 0.7],
            [8, 0.6]
        ])
            cost.record(length, milliseconds);
        expect(cost.predict(1)).toBe(0.6);
        expect(cost.predict(0)).toBe(0.3);
        // Drafted steps measured cheaper than steps without a draft are predicted to cost as much as those.
        for (let sample = 0; sample < 15; sample++) cost.record(3, 0.1);
        expect(cost.predict(3)).toBe(0.3);
        cost.record(0, -1);
        // A negative sample (clocks of two calls) counts as 0: the median of 0, 0.2, 0.3 and 9.
        expect(cost.predict(0)).toBe(0.25);
    });

    it("measures a cost afresh once its samples are stale, so one measured under other load does not stand for good", () => {
        const cost = new HostStepCost();
        for (let sample = 0; sample < 15; sample++) cost.record(0, 5);
        for (let sample = 0; sample < staleAfter; sample++) cost.record(4, 1);
        expect(cost.fresh(0)).toBe(true);
        cost.record(4, 1);
        expect(cost.fresh(0)).toBe(false);
        expect(cost.predict(0)).toBe(5);
        cost.record(0, 0.5);
        expect(cost.fresh(0)).toBe(true);
        expect(cost.predict(0)).toBe(0.5);
    });
});
