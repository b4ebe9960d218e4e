import {describe, expect, it} from "vitest";
import type {BatteryItem} from "../batteries/BatteryItem.js";
import {EmptyBatteryError, InvalidInputError} from "../errors.js";
import {splitBattery} from "./splitBattery.js";

const item = (id: string, task: string): BatteryItem => ({id, task, prompt: id, reference: "x", scorer: "exact-match"});
const battery = [
    ...Array.from({length: 10}, (_value, index) => item(`math-${index}`, "math")),
    ...Array.from({length: 4}, (_value, index) => item(`qa-${index}`, "qa")),
    item("lonely", "rare")
];

describe("splitBattery", () => {
    it("splits each task into disjoint calibration and evaluation parts covering the battery", () => {
        const {calibration, evaluation} = splitBattery(battery, 0.5);
        const calibrationIds = calibration.map((entry) => entry.id);
        const evaluationIds = evaluation.map((entry) => entry.id);
        expect(calibrationIds.filter((id) => evaluationIds.includes(id))).toEqual([]);
        expect([...calibrationIds, ...evaluationIds].sort()).toEqual(battery.map((entry) => entry.id).sort());
        expect(calibration.filter((entry) => entry.task === "math")).toHaveLength(5);
        expect(calibration.filter((entry) => entry.task === "qa")).toHaveLength(2);
        expect(evaluation.filter((entry) => entry.task === "qa")).toHaveLength(2);
    });

    it("depends on the item ids and the seed, not on the order of the file", () => {
        const forward = splitBattery(battery, 0.3, 4)
            .calibration.map((entry) => entry.id)
            .sort();
        const reversed = splitBattery([...battery].reverse(), 0.3, 4)
            .calibration.map((entry) => entry.id)
            .sort();
        expect(reversed).toEqual(forward);
        const seeds = new Set(
            [0, 1, 2, 3, 4, 5].map((seed) =>
                splitBattery(battery, 0.5, seed)
                    .calibration.map((entry) => entry.id)
                    .join(",")
            )
        );
        expect(seeds.size).toBeGreaterThan(1);
        // A small task still lands on both sides, whatever the share.
        const tiny = splitBattery(battery, 0.1);
        expect(tiny.calibration.filter((entry) => entry.task === "qa")).toHaveLength(1);
    });

    it("rejects a battery that cannot make two non-empty splits, and shares outside (0, 1)", () => {
        expect(() => splitBattery([], 0.5)).toThrow(EmptyBatteryError);
        expect(() => splitBattery([item("only", "t")], 0.5)).toThrow(/cannot make two non-empty splits/);
        expect(() => splitBattery(battery, 1)).toThrow(InvalidInputError);
        expect(() => splitBattery(battery, 0)).toThrow(/^calibrationShare: /);
    });
});
