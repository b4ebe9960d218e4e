import {describe, expect, it} from "vitest";
import {SpeculationLoad} from "./SpeculationLoad.js";

/** The choices (1-based) on which `decide` said yes, out of `choices`. */
function yeses(choices: number, decide: () => boolean): number[] {
    const found: number[] = [];
    for (let choice = 1; choice <= choices; choice++) if (decide()) found.push(choice);
    return found;
}

describe("SpeculationLoad.reprobe", () => {
    it("never re-probes while steps without a draft are measured lately", () => {
        const load = new SpeculationLoad();
        expect(yeses(2000, () => load.reprobe(false))).toEqual([]);
    });

    it("re-probes for four steps once stale, at doubling intervals, and from the first interval again after a skipped step", () => {
        const load = new SpeculationLoad();
        expect(yeses(400, () => load.reprobe(true))).toEqual([64, 65, 66, 67, 67 + 128, 67 + 129, 67 + 130, 67 + 131]);
        load.skipped();
        expect(yeses(70, () => load.reprobe(true))).toEqual([64, 65, 66, 67]);
    });
});

describe("SpeculationLoad.skipOrProbe", () => {
    it("probes once the skipped steps' time is 1 / 3% of the probe's predicted cost, and at least once in 256 skipped steps", () => {
        const cheap = new SpeculationLoad();
        expect(yeses(20, () => cheap.skipOrProbe(1, 0))[0]).toBe(8);
        // A probe predicted to cost 6 ms waits for 200 ms of skipped steps of 1 ms.
        const dear = new SpeculationLoad();
        expect(yeses(300, () => dear.skipOrProbe(1, 6))[0]).toBe(200);
        const hopeless = new SpeculationLoad();
        expect(yeses(300, () => hopeless.skipOrProbe(1, 1e9))[0]).toBe(257);
    });
});
