import {describe, expect, it} from "vitest";
import {EnumerationTooLargeError} from "../errors.js";
import {enumerateOutcomes} from "./enumerateOutcomes.js";
import {SeededChance} from "./SeededChance.js";

describe("enumerateOutcomes", () => {
    it("returns every path of a two-stage experiment with its exact probability", () => {
        const outcomes = enumerateOutcomes((chance) => {
            const coin = chance.accept(0.25);
            return coin ? `heads-${chance.choose([1, 0, 3], 4)}` : "tails";
        });
        const byResult = Object.fromEntries(outcomes.map(({result, probability}) => [result, probability]));
        expect(byResult).toEqual({"heads-0": 0.0625, "heads-2": 0.1875, tails: 0.75});
    });

    it("prunes zero-probability branches, including accept(0) and accept(1)", () => {
        expect(enumerateOutcomes((chance) => chance.accept(1))).toEqual([{result: true, probability: 1}]);
        expect(enumerateOutcomes((chance) => chance.accept(0))).toEqual([{result: false, probability: 1}]);
    });

    it("throws a typed error past the outcome bound", () => {
        expect(() => enumerateOutcomes((chance) => [chance.choose([1, 1, 1], 3), chance.choose([1, 1, 1], 3)], {maxOutcomes: 5})).toThrow(
            EnumerationTooLargeError
        );
    });
});

describe("SeededChance", () => {
    it("never returns a zero-weight index and respects the total", () => {
        const chance = new SeededChance(3);
        for (let index = 0; index < 10_000; index++) expect(chance.choose([0, 2, 0, 1, 0], 3)).not.toBe(0);
        expect(() => chance.choose([0, 0], 0)).toThrow(RangeError);
    });
    it("accept(0) is always false and accept(1) always true", () => {
        const chance = new SeededChance(4);
        for (let index = 0; index < 10_000; index++) {
            expect(chance.accept(0)).toBe(false);
            expect(chance.accept(1)).toBe(true);
        }
    });
});
