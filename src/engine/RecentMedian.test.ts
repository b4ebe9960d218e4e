import {describe, expect, it} from "vitest";
import {RecentMedian} from "./RecentMedian.js";

describe("RecentMedian", () => {
    it("ignores an outlier and follows a lasting change of the last samples", () => {
        const median = new RecentMedian(5);
        expect(median.value).toBeUndefined();
        for (const value of [1, 1.2, 100, 0.9, 1.1]) median.add(value);
        expect(median.value).toBe(1.1);
        for (const value of [3, 3, 3]) median.add(value);
        expect(median.value).toBe(3);
        expect(median.count).toBe(5);
        median.add(Number.NaN);
        expect(median.count).toBe(5);
    });
});
