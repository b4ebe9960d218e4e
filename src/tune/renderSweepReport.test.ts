import {describe, expect, it} from "vitest";
import {truncationWarning} from "./renderSweepReport.js";

const outcomes = (tokens: number[]) => tokens.map((count, index) => ({id: `item-${index}`, pass: true, tokens: count}));

describe("truncationWarning", () => {
    it("counts the target-only answers that reached --max-tokens", () => {
        const points = [
            {role: "target-only" as const, outcomes: outcomes([12, 40, 40, 39])},
            {role: "draft-only" as const, outcomes: outcomes([40, 40, 40, 40])}
        ];
        expect(truncationWarning(points, 40)).toBe(
            "- **2 of 4 target-only answers stopped at --max-tokens (40)**: they may be cut short and scored wrong in every row; raise --max-tokens unless your answers are meant to be that long."
        );
    });

    it("says nothing when every target-only answer ended before the cap, or without a target-only row", () => {
        expect(truncationWarning([{role: "target-only" as const, outcomes: outcomes([12, 39])}], 40)).toBeNull();
        expect(truncationWarning([{role: "draft-only" as const, outcomes: outcomes([40])}], 40)).toBeNull();
    });
});
