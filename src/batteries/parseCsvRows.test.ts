import {describe, expect, it} from "vitest";
import {MalformedRowError} from "../errors.js";
import {parseCsvRows} from "./parseCsvRows.js";

describe("parseCsvRows", () => {
    it("reads named fields with their starting line, across quoted newlines", () => {
        const rows = parseCsvRows('goal,target\n"multi\nline",t1\nplain,t2\n', "a.csv", ["goal"]);
        expect(rows.map((row) => row.fields.goal)).toEqual(["multi\nline", "plain"]);
        expect(rows[1].line).toBe(4);
    });

    it("names the file and line of a missing column, a wrong field count and broken quoting", () => {
        expect(() => parseCsvRows("target\nx\n", "a.csv", ["goal"])).toThrow(/a\.csv:1: missing column "goal"/);
        expect(() => parseCsvRows("goal,target\nx,y\nonly-one\n", "a.csv", ["goal"])).toThrow(MalformedRowError);
        expect(() => parseCsvRows("goal,target\nx,y\nonly-one\n", "a.csv", ["goal"])).toThrow(/a\.csv:3: expected 2 fields, found 1/);
        expect(() => parseCsvRows('goal,target\nx,"unterminated\n', "a.csv", ["goal"])).toThrow(/a\.csv:\d+: malformed CSV/);
    });
});
