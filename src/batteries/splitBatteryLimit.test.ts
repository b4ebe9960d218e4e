import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../errors.js";
import {loadBattery} from "./loadBattery.js";
import {splitBatteryLimit} from "./splitBatteryLimit.js";

describe("splitBatteryLimit", () => {
    it("splits a name or a file from its @N limit", () => {
        expect(splitBatteryLimit("mgsm:de@5")).toEqual({body: "mgsm:de", limit: 5});
        expect(splitBatteryLimit("advbench")).toEqual({body: "advbench", limit: Infinity});
        expect(splitBatteryLimit("runs/a@b/items.jsonl@20")).toEqual({body: "runs/a@b/items.jsonl", limit: 20});
        expect(splitBatteryLimit("runs/user@host.tsv")).toEqual({body: "runs/user@host.tsv", limit: Infinity});
    });

    it("refuses a limit that is not a whole number of at least 1, naming the suffix", () => {
        for (const [entry, suffix] of [
            ["mgsm:de@-5", "@-5"],
            ["advbench@all", "@all"],
            ["bbq:Religion@0", "@0"],
            ["gsm8k@", "@"],
            ["csqa@2.5", "@2.5"]
        ])
            expect(() => splitBatteryLimit(entry)).toThrow(
                new InvalidInputError(
                    `"${entry}": the @ suffix keeps an entry's first N items and must be a whole number of at least 1, got "${suffix}"`,
                    "battery"
                )
            );
    });

    it("is how loadBattery reads a spec, before any file is opened", async () => {
        await expect(loadBattery("mgsm:de@-5", "/nonexistent")).rejects.toThrow(/"mgsm:de@-5": the @ suffix keeps/);
    });
});
