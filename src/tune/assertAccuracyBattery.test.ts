import {describe, expect, it} from "vitest";
import type {BatteryItem} from "../batteries/BatteryItem.js";
import {parseJsonlBattery} from "../batteries/loadJsonlBattery.js";
import {EmptyBatteryError, ScorerMismatchError} from "../errors.js";
import {assertAccuracyBattery} from "./assertAccuracyBattery.js";

describe("assertAccuracyBattery", () => {
    it("rejects an empty battery with a typed error", () => {
        expect(() => assertAccuracyBattery([])).toThrow(EmptyBatteryError);
        expect(() => assertAccuracyBattery([])).toThrow(/^items: has no items/);
    });

    it("rejects items the scorer cannot judge, naming them", () => {
        const items = parseJsonlBattery(
            [
                JSON.stringify({id: "a", task: "t", prompt: "p", reference: "r"}),
                JSON.stringify({id: "b", task: "t", prompt: "p"}),
                JSON.stringify({id: "c", task: "t", prompt: "p"})
            ].join("\n"),
            "battery.jsonl"
        );
        let caught: unknown;
        try {
            assertAccuracyBattery(items);
        } catch (error) {
            caught = error;
        }
        expect(caught).toBeInstanceOf(ScorerMismatchError);
        expect((caught as ScorerMismatchError).itemIds).toEqual(["b", "c"]);
        expect((caught as Error).message).toMatch(/2 of 3 items cannot be scored for accuracy: "b" has no scorer/);
        const choiceless: BatteryItem = {id: "m", task: "t", prompt: "p", reference: "A", scorer: "multiple-choice"};
        expect(() => assertAccuracyBattery([choiceless])).toThrow(/"m" uses scorer "multiple-choice" without choices/);
    });

    it("accepts references, choices and refusal items", () => {
        expect(() =>
            assertAccuracyBattery([
                {id: "a", task: "t", prompt: "p", reference: "r", scorer: "exact-match"},
                {id: "b", task: "t", prompt: "p", reference: "A", choices: [{label: "A", text: "yes"}], scorer: "multiple-choice"},
                {id: "c", task: "harm", prompt: "p", scorer: "refusal"}
            ])
        ).not.toThrow();
    });
});
