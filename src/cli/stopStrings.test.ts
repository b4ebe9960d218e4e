import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../errors.js";
import {stopStrings} from "./stopStrings.js";

describe("stopStrings", () => {
    it("decodes \\n, \\t and \\\\ and keeps other text", () => {
        expect(stopStrings(["\\n\\n", "a\\tb", "c\\\\n", "</s>"])).toEqual(["\n\n", "a\tb", "c\\n", "</s>"]);
        expect(stopStrings(undefined)).toEqual([]);
    });

    it("refuses an empty stop string, naming the option", () => {
        expect(() => stopStrings([""], "--stop")).toThrow(InvalidInputError);
    });
});
