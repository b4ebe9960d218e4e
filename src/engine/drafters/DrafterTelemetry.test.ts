import {describe, expect, it} from "vitest";
import {DrafterTelemetry} from "./DrafterTelemetry.js";

describe("DrafterTelemetry's unavailable drafters", () => {
    it("counts the steps a drafter could not draft, keeps the first reason, merges, and reports only that drafter", () => {
        const one = new DrafterTelemetry();
        one.record(["eagle3", "ngram:1:2"], "ngram:1:2", 2, 1);
        one.noteUnavailable("eagle3", "rows below 9 were not captured");
        one.noteUnavailable("eagle3", "rows below 12 were not captured");
        const other = new DrafterTelemetry();
        other.record(["eagle3"], "eagle3", 0, 0);
        other.noteUnavailable("eagle3", "another reason");
        one.merge(other);
        const json = one.toJSON();
        expect(json.eagle3?.unavailable).toEqual({steps: 3, reason: "rows below 9 were not captured"});
        expect(json.eagle3?.lookups).toBe(2);
        expect(json["ngram:1:2"]).not.toHaveProperty("unavailable");
        // The report is a copy: later steps do not change it.
        one.noteUnavailable("eagle3", "x");
        expect(json.eagle3?.unavailable?.steps).toBe(3);
    });
});
