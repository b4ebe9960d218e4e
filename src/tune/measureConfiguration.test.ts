import {describe, expect, it} from "vitest";
import {skewedBigramPair} from "../fairness/testing/skewedBigramPair.js";
import {measureConfiguration} from "./measureConfiguration.js";
import {targetReferenceBattery} from "./testing/targetReferenceBattery.js";

describe("measureConfiguration", () => {
    it("cuts every output at the first stop string, as a serving stack's `stop` does", async () => {
        const {target, draft} = skewedBigramPair(5);
        const items = await targetReferenceBattery(target);
        const settings = {
            policy: {kind: "strict" as const},
            gamma: 3,
            sampling: {temperature: 0, topK: 0, topP: 1, minP: 0},
            maxTokens: 8,
            seed: 0
        };
        const free = await measureConfiguration(target, draft, items, settings);
        // Stop at the most common output character after the first: some outputs must get shorter.
        const stopped = await measureConfiguration(target, draft, items, {...settings, stop: ["h"]});
        expect(stopped.emittedTokens).toBeLessThan(free.emittedTokens);
        expect(stopped.outcomes.every((outcome, index) => outcome.tokens <= free.outcomes[index].tokens)).toBe(true);
    });
});
