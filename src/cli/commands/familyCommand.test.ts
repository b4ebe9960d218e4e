import {describe, expect, it} from "vitest";
import {InvalidInputError} from "../../errors.js";
import {parseMemberNames} from "./familyCommand.js";

describe("specgate family --only", () => {
    it("accepts recipe member names and rejects others", () => {
        expect(parseMemberNames(undefined)).toBeUndefined();
        expect(parseMemberNames("draft, draft-skewed")).toEqual(["draft", "draft-skewed"]);
        expect(() => parseMemberNames("draft,tiny")).toThrow(InvalidInputError);
        expect(() => parseMemberNames(",")).toThrow(/target/);
    });
});
